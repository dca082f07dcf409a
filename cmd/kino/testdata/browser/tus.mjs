// Uploads a file to kino with tus-js-client, as a customer's code would,
// and prints one JSON line per event on stdout:
//   {"event":"created","url":...}, {"event":"success","url":...},
//   {"event":"stopped","url":...,"bytes":n} or {"event":"error","status":n,"message":...}.
//
// usage: node tus.mjs '<json options>' where the options are
//   file        path of the file to upload
//   endpoint    tus creation URL (/v1/uploads/tus or a direct upload URL)
//   uploadUrl   an existing upload to resume instead (optional)
//   key         API key (optional: direct upload URLs need none)
//   collection  collection slug (optional with a direct upload URL)
//   chunkSize   bytes per PATCH
//   stopAfter   abort once this many bytes are acknowledged (optional): the
//               upload is left for a later run to resume
//   retries     retry delays in ms (optional; default a few quick ones)
import fs from 'node:fs';
import path from 'node:path';
import * as tus from 'tus-js-client';

const opts = JSON.parse(process.argv[2]);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const file = fs.readFileSync(opts.file);
const metadata = { filename: path.basename(opts.file) };
if (opts.collection) metadata.collection = opts.collection;

const upload = new tus.Upload(file, {
  endpoint: opts.endpoint,
  uploadUrl: opts.uploadUrl || null,
  headers: opts.key ? { Authorization: `Bearer ${opts.key}` } : {},
  chunkSize: opts.chunkSize,
  metadata,
  retryDelays: opts.retries || [0, 50, 100, 200, 400, 800, 1600, 3200],
  storeFingerprintForResuming: false,
  removeFingerprintOnSuccess: true,
  onUploadUrlAvailable() {
    out({ event: 'created', url: upload.url });
  },
  onChunkComplete(_size, acked) {
    if (opts.stopAfter && acked >= opts.stopAfter && acked < file.length) {
      upload.abort(false).then(() => {
        out({ event: 'stopped', url: upload.url, bytes: acked });
        process.exit(0);
      });
    }
  },
  onSuccess() {
    out({ event: 'success', url: upload.url });
  },
  onError(err) {
    const res = err.originalResponse;
    out({ event: 'error', status: res ? res.getStatus() : 0, message: String(err.message).slice(0, 500), body: res ? res.getBody() : '' });
    process.exitCode = 2;
  },
});
upload.start();
