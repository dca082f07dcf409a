package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
)

// makespanClip is the clip every makespan run uploads, rendered once.
var makespanClip struct {
	once sync.Once
	data []byte
}

// oneWorkerMakespans are the one-worker runs of this process, for the
// two-worker runs' ratio.
var oneWorkerMakespans []float64

// BenchmarkClusterMakespan measures the makespan of 6 uploads (10 s
// 1280x720 25 fps with audio) on a 3-node cluster (real kino serve
// processes, clustered embedded NATS, R3 streams, --media nats) with one
// transcoding process against two: node0 takes the uploads and
// transcodes nothing, node1 runs --workers 1, node2 runs --workers 0
// (one-worker) or --workers 1 (two-workers). The account is on the
// business plan, whose per-account transcode concurrency (4) lets both
// work at once. Timed from the first upload's start until node0 lists all
// six COMPLETED (polled every 100 ms); the cluster's start is not timed.
//
//	go test -run '^$' -bench ClusterMakespan -benchtime 1x -count 3 ./cmd/kino/
//
// Metrics: makespan-s; both-encoding-s, the time during which node1 and
// node2 both had an ffmpeg running (sampled every 100 ms, 0 with one
// worker); cpu-busy, the share of the machine's CPU time (all cores,
// /proc/stat) not idle during the timed part, whoever used it; kino-cores,
// the CPU time the three nodes and their ffmpegs used over the makespan
// (how many cores kino had on average: on a machine shared with other
// jobs, its share); for two-workers, ratio, its makespan over the median of this
// process's one-worker runs (run -bench with both, one-worker first, as
// go test orders them).
func BenchmarkClusterMakespan(b *testing.B) {
	for _, tc := range []struct {
		name    string
		workers string // node2's --workers
	}{{"one-worker", "0"}, {"two-workers", "1"}} {
		b.Run(tc.name, func(b *testing.B) {
			makespanClip.once.Do(func() { makespanClip.data = makeClip(b, "clip.mp4", 1280, 720, 10, true) })
			var sum, both, busy, cores float64
			for i := 0; i < b.N; i++ {
				r := clusterMakespan(b, tc.workers, makespanClip.data)
				sum, both, busy, cores = sum+r.makespan, both+r.bothEncoding, busy+r.cpuBusy, cores+r.kinoCores
			}
			mean := sum / float64(b.N)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(mean, "makespan-s")
			b.ReportMetric(both/float64(b.N), "both-encoding-s")
			b.ReportMetric(busy/float64(b.N), "cpu-busy")
			b.ReportMetric(cores/float64(b.N), "kino-cores")
			if tc.workers == "0" {
				oneWorkerMakespans = append(oneWorkerMakespans, mean)
			} else if len(oneWorkerMakespans) > 0 {
				one := slices.Clone(oneWorkerMakespans)
				slices.Sort(one)
				b.ReportMetric(mean/one[len(one)/2], "ratio")
			}
		})
	}
}

// clusterMakespan starts a fresh 3-node cluster, uploads the clip 6 times
// through node0 and returns the seconds until all are COMPLETED, and the
// seconds during which node1 and node2 were both running an ffmpeg, the
// share of the machine's CPU time that was busy meanwhile and how many
// cores kino used on average.
func clusterMakespan(b *testing.B, node2Workers string, clip []byte) (r makespanRun) {
	b.StopTimer()
	c := newKinoCluster(b, 3, "--webhook-workers", "0")
	c.nodes[0].flags = []string{"--workers", "0"}
	c.nodes[1].flags = []string{"--workers", "1"}
	c.nodes[2].flags = []string{"--workers", node2Workers}
	c.start()
	a := c.nodes[0]
	a.cli("accounts", "create", "acme", "--plan", "business")
	key := lastLine(a.cli("keys", "create", "acme", "--label", "makespan"))
	a.cli("collections", "create", "acme", "films", "Films")
	a.waitKey(key)

	// Which transcoding nodes run an ffmpeg, every 100 ms.
	stop, sampled := make(chan struct{}), make(chan time.Duration)
	go func() {
		var both time.Duration
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				sampled <- both
				return
			case <-tick.C:
				if ffmpegChild(c.nodes[1].cmd.Process.Pid) != 0 && ffmpegChild(c.nodes[2].cmd.Process.Pid) != 0 {
					both += 100 * time.Millisecond
				}
			}
		}
	}()

	b.StartTimer()
	began := time.Now()
	busy0, total0 := cpuTimes(b)
	kino0 := c.cpuTicks(b)
	var ids []string
	for i := 0; i < 6; i++ {
		ids = append(ids, a.upload(key, "films", fmt.Sprintf("clip%d.mp4", i), clip))
	}
	deadline := began.Add(10 * time.Minute)
	for {
		got, ok := a.videos(key)
		done := ok
		for _, id := range ids {
			if got[id] == domain.StatusFailed {
				b.Fatalf("video %s FAILED", id)
			}
			done = done && got[id] == domain.StatusCompleted
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("not all COMPLETED after 10 minutes: %v", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.makespan = time.Since(began).Seconds()
	busy1, total1 := cpuTimes(b)
	kino1 := c.cpuTicks(b)
	b.StopTimer()
	close(stop)
	r.bothEncoding = (<-sampled).Seconds()
	r.cpuBusy = float64(busy1-busy0) / float64(total1-total0)
	r.kinoCores = float64(kino1-kino0) / clockTicks / r.makespan
	return r
}

type makespanRun struct{ makespan, bothEncoding, cpuBusy, kinoCores float64 }

// clockTicks is USER_HZ, the unit of /proc's CPU times (100 on Linux).
const clockTicks = 100

// cpuTicks is the CPU time (user and system) the cluster's processes
// used so far, with that of their children waited for (every ffmpeg of a
// finished job), from /proc/<pid>/stat.
func (c *kinoCluster) cpuTicks(b *testing.B) (ticks uint64) {
	for _, n := range c.nodes {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n.cmd.Process.Pid))
		if err != nil {
			b.Fatal(err)
		}
		s := string(raw)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		// state ppid ... utime(11) stime cutime cstime(14)
		for _, f := range fields[11:15] {
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				b.Fatalf("/proc/%d/stat: %q", n.cmd.Process.Pid, s)
			}
			ticks += v
		}
	}
	return ticks
}

// cpuTimes is the machine's busy and total CPU time so far, in clock
// ticks, from /proc/stat's cpu line (idle and iowait are not busy).
func cpuTimes(b *testing.B) (busy, total uint64) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		b.Fatalf("/proc/stat: %q", line)
	}
	for i, f := range fields[1:] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			b.Fatalf("/proc/stat: %q", line)
		}
		if i >= 8 { // guest time is already counted in user
			break
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}
