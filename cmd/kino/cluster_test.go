package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/natsserver"
	"github.com/kino-video/kino/transport/httpapi/httpapitest"
)

// kinoCluster is N real `kino serve` processes (the built binary) whose
// embedded NATS servers form one cluster on loopback. Media is kept in the
// cluster's object store (--media nats): no node shares a directory with
// another.
type kinoCluster struct {
	t      testing.TB
	bin    string
	root   string
	routes string
	flags  []string // given to every node
	nodes  []*clusterNode
}

// clusterNode is one node: its data directory and cluster address stay
// across restarts; its HTTP and NATS client ports are new on each start.
type clusterNode struct {
	c           *kinoCluster
	i           int
	kind        string   // "serve" or "worker"
	flags       []string // this node's own flags, after the cluster's
	name        string
	data        string
	clusterAddr string

	cmd    *exec.Cmd
	exited chan struct{}
	up     chan [2]string // the NATS client URL and the HTTP address, once serving
	api    *harness       // requests to this node's API, once up
	nats   string
	mu     sync.Mutex
	log    string // the current run's stderr, kept for failures
}

func (n *clusterNode) logText() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.log
}

// freeClusterAddr is a loopback address whose port was free a moment ago:
// the routes must name every node's cluster port before any starts. It is
// drawn below Linux's ephemeral range (32768 up), where the package's
// other servers (port 0) and every outgoing connection take theirs, so
// nothing else takes it before the node listens.
func freeClusterAddr(t testing.TB) string {
	t.Helper()
	for range 200 {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000)))
		if err != nil {
			continue
		}
		defer l.Close()
		return l.Addr().String()
	}
	t.Fatal("no free port between 20000 and 32000")
	return ""
}

// newKinoCluster prepares n kino serve nodes as an operator would: kino
// cluster init on the first data directory, its credentials copied to the
// others, the same route list on every node. Nothing runs until start.
func newKinoCluster(t testing.TB, n int, flags ...string) *kinoCluster {
	kinds := make([]string, n)
	for i := range kinds {
		kinds[i] = "serve"
	}
	return newMixedCluster(t, kinds, flags...)
}

// newMixedCluster is newKinoCluster with a kind per node: "serve" or
// "worker" (kino worker with its own embedded node).
func newMixedCluster(t testing.TB, kinds []string, flags ...string) *kinoCluster {
	n := len(kinds)
	t.Helper()
	root := t.TempDir()
	passable(t, root)
	c := &kinoCluster{t: t, bin: buildKino(t), root: root, flags: append([]string{"--media", "nats"}, flags...)}
	var routes []string
	for i := 0; i < n; i++ {
		node := &clusterNode{c: c, i: i, kind: kinds[i], name: fmt.Sprintf("node%d", i), data: filepath.Join(root, fmt.Sprintf("node%d", i)), clusterAddr: freeClusterAddr(t)}
		if err := os.Mkdir(node.data, 0o711); err != nil {
			t.Fatal(err)
		}
		routes = append(routes, "nats://"+node.clusterAddr)
		c.nodes = append(c.nodes, node)
	}
	c.routes = strings.Join(routes, ",")
	if out, err := exec.Command(c.bin, "cluster", "init", "--data", c.nodes[0].data).CombinedOutput(); err != nil {
		t.Fatalf("kino cluster init: %v\n%s", err, out)
	}
	if fi, err := os.Stat(natsserver.ClusterSecretFile(c.nodes[0].data)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cluster secret: %v, mode %v; want 0600", err, fi.Mode())
	}
	for _, node := range c.nodes[1:] {
		copyTree(t, filepath.Join(c.nodes[0].data, natsserver.CredsDir), filepath.Join(node.data, natsserver.CredsDir))
		copyTree(t, filepath.Join(c.nodes[0].data, "secret.key"), filepath.Join(node.data, "secret.key"))
	}
	t.Cleanup(func() {
		for _, node := range c.nodes {
			node.kill()
		}
		if t.Failed() {
			for _, node := range c.nodes {
				t.Logf("--- %s log (last run):\n%s", node.name, tail(node.logText(), 40))
			}
		}
	})
	return c
}

// copyTree copies a file, or a directory's files, keeping their modes.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.MkdirAll(dst, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		copyTree(t, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
	}
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

// start launches every node at once (each waits for the others to elect a
// JetStream leader) and returns when all of them serve.
func (c *kinoCluster) start() {
	for _, node := range c.nodes {
		node.launch()
	}
	for _, node := range c.nodes {
		node.waitUp()
	}
}

var (
	servingRe = regexp.MustCompile(`msg="kino serving".* listen=(\S+)`)
	workingRe = regexp.MustCompile(`msg="kino worker running"`)
	natsRe    = regexp.MustCompile(`msg="embedded NATS started" url=(\S+)`)
)

// launch starts this node's kino serve or kino worker without waiting for
// it.
func (n *clusterNode) launch() {
	t := n.c.t
	t.Helper()
	args := []string{n.kind, "--data", n.data, "--nats-listen", "127.0.0.1:0",
		"--nats-cluster", n.clusterAddr, "--nats-routes", n.c.routes, "--nats-name", n.name}
	if n.kind == "serve" {
		args = append(args, "--addr", "127.0.0.1:0")
	}
	args = append(append(args, n.c.flags...), n.flags...)
	cmd := exec.Command(n.c.bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	n.log = ""
	n.mu.Unlock()
	n.cmd, n.exited, n.up, n.api = cmd, make(chan struct{}), make(chan [2]string, 1), nil
	exited := n.exited
	up := n.up
	go func() {
		var natsURL string
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			n.mu.Lock()
			n.log += line + "\n"
			n.mu.Unlock()
			if m := natsRe.FindStringSubmatch(line); m != nil {
				natsURL = m[1]
			}
			if m := servingRe.FindStringSubmatch(line); m != nil {
				up <- [2]string{natsURL, m[1]}
			}
			if workingRe.MatchString(line) {
				up <- [2]string{natsURL, ""}
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
}

// waitUp waits until the node serves its API.
func (n *clusterNode) waitUp() {
	t := n.c.t
	t.Helper()
	select {
	case u := <-n.up:
		n.nats = u[0]
		if u[1] != "" {
			n.api = &harness{t: t, url: "http://" + u[1], api: httpapitest.NewClient(t, "http://"+u[1])}
		}
	case <-n.exited:
		t.Fatalf("%s exited before serving:\n%s", n.name, tail(n.logText(), 30))
	case <-time.After(90 * time.Second):
		t.Fatalf("%s not serving after 90 s:\n%s", n.name, tail(n.logText(), 30))
	}
}

// restart starts the node again on its data directory and waits for it.
func (n *clusterNode) restart() {
	n.launch()
	n.waitUp()
}

// kill ends the node with SIGKILL, as a crash would, and waits for it.
func (n *clusterNode) kill() {
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.exited
	n.cmd, n.api = nil, nil
}

func (n *clusterNode) running() bool { return n.cmd != nil }

// cli runs a kino command against this node's NATS with its credentials.
func (n *clusterNode) cli(args ...string) string {
	t := n.c.t
	t.Helper()
	out, err := exec.Command(n.c.bin, append(args, "--data", n.data, "--nats", n.nats)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kino %v on %s: %v\n%s", args, n.name, err, out)
	}
	return string(out)
}

// store opens the test's own client of this node's NATS (admin role).
func (n *clusterNode) store() *eventstore.Store {
	t := n.c.t
	t.Helper()
	s, err := eventstore.Open(context.Background(), eventstore.Config{URL: n.nats, Auth: eventstore.Auth{CredsFile: natsserver.CredsFile(n.data, eventstore.RoleAdmin)}, Name: t.Name(), ReadyWait: time.Minute, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// survivor is a running kino serve other than the ones named.
func (c *kinoCluster) survivor(not ...*clusterNode) *clusterNode {
	for _, n := range c.nodes {
		if n.running() && n.kind == "serve" && !contains(not, n) {
			return n
		}
	}
	c.t.Fatal("no node running")
	return nil
}

func contains(nodes []*clusterNode, n *clusterNode) bool {
	for _, m := range nodes {
		if m == n {
			return true
		}
	}
	return false
}

// upload posts a clip through node n until the node accepts it (202),
// within a deadline: while the cluster elects a new stream leader an
// upload may fail with a 5xx, which the client retries, as clients do.
// Only accepted uploads count.
func (n *clusterNode) upload(key, coll, name string, data []byte) string {
	t := n.c.t
	t.Helper()
	var id string
	eventstoretest.EventuallyEvery(t, "an upload accepted", 200*time.Millisecond, func() (bool, string) {
		r := n.api.upload(key, coll, name, data)
		if r.status == 202 {
			id = r.json(t)["video"].(map[string]any)["id"].(string)
			return true, ""
		}
		if r.status < 500 && r.status != 429 {
			t.Fatalf("upload %s through %s: %d %s", name, n.name, r.status, r.body)
		}
		return false, fmt.Sprintf("upload %s through %s: %d %s", name, n.name, r.status, r.body)
	})
	return id
}

// videos is node n's list of the account's videos: id to status. ok is
// false when the node refused for the moment (429 under the rate limit,
// 5xx while its NATS changes leaders).
func (n *clusterNode) videos(key string) (map[string]domain.Status, bool) {
	t := n.c.t
	t.Helper()
	r := n.api.do("GET", "/v1/videos?limit=100", key, nil)
	if r.status == 429 || r.status >= 500 {
		return nil, false
	}
	if r.status != 200 {
		t.Fatalf("list on %s: %d %s", n.name, r.status, r.body)
	}
	out := map[string]domain.Status{}
	for _, v := range r.json(t)["videos"].([]any) {
		v := v.(map[string]any)
		out[v["id"].(string)] = domain.Status(v["status"].(string))
	}
	return out, true
}

// waitListed polls node n's list until every id has status want (any
// status when want is ""), within a deadline. A video that ends FAILED
// fails the test at once.
func (n *clusterNode) waitListed(key string, want domain.Status, ids ...string) {
	t := n.c.t
	t.Helper()
	// Every 250 ms: few requests, for the plan's rate limit.
	eventstoretest.EventuallyEvery(t, "the videos listed", 250*time.Millisecond, func() (bool, string) {
		got, ok := n.videos(key)
		if !ok {
			return false, n.name + " refused the list"
		}
		for _, id := range ids {
			st, listed := got[id]
			if listed && st == domain.StatusFailed && want != domain.StatusFailed {
				t.Fatalf("video %s is FAILED on %s", id, n.name)
			}
			if !listed || want != "" && st != want {
				return false, fmt.Sprintf("%s: video %s listed %v with status %q, want %q", n.name, id, listed, st, want)
			}
		}
		return true, ""
	})
}

// ffmpegChild is the pid of an ffmpeg whose parent is pid, or 0.
func ffmpegChild(pid int) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 || s[open+1:end] != "ffmpeg" {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == pid {
			return child
		}
	}
	return 0
}

// waitEncoding polls until one of the running nodes has an ffmpeg child
// and returns that node.
func (c *kinoCluster) waitEncoding() *clusterNode {
	c.t.Helper()
	var found *clusterNode
	eventstoretest.EventuallyEvery(c.t, "a node encoding", 5*time.Millisecond, func() (bool, string) {
		for _, n := range c.nodes {
			if n.running() && ffmpegChild(n.cmd.Process.Pid) != 0 {
				found = n
				return true, ""
			}
		}
		return false, "no node runs ffmpeg"
	})
	return found
}

// node is the node named name.
func (c *kinoCluster) node(name string) *clusterNode {
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	c.t.Fatalf("no node %q", name)
	return nil
}

// hookReceiver counts the webhook deliveries it receives by their
// x-svc-delivery header (the same on every attempt of one delivery).
type hookReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string]int
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{got: map[string]int{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.got[r.Header.Get("x-svc-delivery")]++
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// deliveries is how many times each delivery id arrived.
func (h *hookReceiver) deliveries() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.got))
	for k, v := range h.got {
		out[k] = v
	}
	return out
}

// transcodeSucceeded counts the TranscodeSucceeded events of each video.
func transcodeSucceeded(t *testing.T, s *eventstore.Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	err := s.Scan(context.Background(), []string{domain.AggVideo + ".*." + domain.TypeTranscodeSucceeded}, func(e domain.Event) error {
		out[e.AggregateID]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Three kino serve processes, their embedded NATS one cluster with R3
// streams and the media in the cluster's object store (R3 too).
//
// The scenario: a video uploaded through node A is listed on node B and
// transcoded by a node other than A (A runs no transcoder); its playlist,
// a segment and its thumbnail play from every node's /cdn. Killing
// (SIGKILL) the node running an encode, and then the event stream's
// leader, loses no accepted upload; every video ends COMPLETED with
// exactly one TranscodeSucceeded; the subscription receives each event
// once (counted by x-svc-delivery); every completed video plays from
// every survivor; a killed node restarted rejoins, lists everything and
// plays it.
func TestClusterOfThreeSurvivesANodesDeath(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts three kino processes")
	}
	c := newKinoCluster(t, 3,
		"--transcode-ack-wait", "3s", "--transcode-backoff", "100ms", "--transcode-attempts", "3",
		"--webhooks-allow-private", "--webhook-backoff", "200ms,500ms,1s", "--webhook-timeout", "5s")
	// A takes uploads but transcodes nothing: what it serves on /cdn was
	// made on another node and reached it through the object store.
	c.nodes[0].flags = []string{"--workers", "0"}
	c.nodes[1].flags = []string{"--workers", "1"}
	c.nodes[2].flags = []string{"--workers", "1"}
	began := time.Now()
	c.start()
	phase := func(what string) { t.Logf("%6.1fs %s", time.Since(began).Seconds(), what) }
	phase("three nodes serving")
	a, b := c.nodes[0], c.nodes[1]

	s := a.store()
	if _, replicas, err := s.StreamLeader(context.Background()); err != nil || len(replicas) != 3 {
		t.Fatalf("event stream has replicas on %q (%v), want 3 on three nodes", replicas, err)
	}
	_ = s.Close()

	a.cli("accounts", "create", "acme", "--plan", "business")
	key := lastLine(a.cli("keys", "create", "acme", "--label", "cluster"))
	a.cli("collections", "create", "acme", "films", "Films")
	// Deliveries are counted by x-svc-delivery: each must arrive once.
	hooks := newHookReceiver(t)
	// Every node's read models must know the key (issued through A's NATS,
	// read by each node from its own replica) before it is used there.
	for _, n := range c.nodes {
		n.waitKey(key)
	}
	if r := b.api.do("POST", "/v1/webhooks", key, map[string]any{"url": hooks.srv.URL, "events": []string{"video.completed", "video.failed"}}); r.status != 201 {
		t.Fatalf("subscribe: %d %s", r.status, r.body)
	}
	short := makeClip(t, "short.mp4", 320, 180, 1, true)
	long := makeClip(t, "long.mp4", 640, 360, 6, true)

	// Upload through A, listed on B, transcoded by some node.
	var ids []string
	ids = append(ids, a.upload(key, "films", "first.mp4", short))
	b.waitListed(key, domain.StatusCompleted, ids...)
	a.waitListed(key, domain.StatusCompleted, ids...)
	c.playsEverywhere(key, ids...)
	phase("the first video plays from every node")

	// Kill the node running an encode mid-way: the job goes to a survivor.
	ids = append(ids, b.upload(key, "films", "killed-mid-encode.mp4", long))
	x := c.waitEncoding()
	phase(x.name + " runs ffmpeg: killing it")
	x.kill()
	s1 := c.survivor(x)
	ids = append(ids, s1.upload(key, "films", "while-one-is-down.mp4", short))
	c.allComplete(key, ids...)
	phase("the survivors list and play every video")
	// Restarted, it rejoins and catches up.
	x.restart()
	phase(x.name + " restarted")
	x.waitListed(key, domain.StatusCompleted, ids...)
	x.plays(key, ids...)

	// Kill the event stream's leader.
	s = c.survivor().store()
	leader, _, err := s.StreamLeader(context.Background())
	_ = s.Close()
	if err != nil || leader == "" {
		t.Fatalf("stream leader %q: %v", leader, err)
	}
	l := c.node(leader)
	phase(l.name + " leads the event stream: killing it")
	l.kill()
	s2 := c.survivor(l)
	ids = append(ids, s2.upload(key, "films", "after-the-leader-died.mp4", short))
	c.allComplete(key, ids...)
	phase("the survivors list and play every video")
	l.restart()
	phase(l.name + " restarted")
	l.waitListed(key, domain.StatusCompleted, ids...)
	l.plays(key, ids...)
	phase(l.name + " lists and plays every video")

	// Exactly one TranscodeSucceeded per video, nothing else listed.
	s = l.store()
	defer s.Close()
	// The scan is served by a replica, which on a node just restarted may
	// still be catching up: read until it has every video's success.
	var succeeded map[string]int
	eventstoretest.EventuallyEvery(t, "every video's success read", 100*time.Millisecond, func() (bool, string) {
		succeeded = transcodeSucceeded(t, s)
		for _, id := range ids {
			if succeeded[id] == 0 {
				return false, "no TranscodeSucceeded read yet for " + id
			}
		}
		return true, ""
	})
	for _, id := range ids {
		if succeeded[id] != 1 {
			t.Errorf("video %s has %d TranscodeSucceeded events, want 1", id, succeeded[id])
		}
	}
	for _, n := range c.nodes {
		got, ok := n.videos(key)
		if ok && len(got) != len(ids) {
			t.Errorf("%s lists %d videos, want %d: %v", n.name, len(got), len(ids), got)
		}
	}
	// One video.completed per video reached the receiver, each once
	// although senders and fan-outs died on the way.
	eventstoretest.EventuallyEvery(t, "one delivery a video", 100*time.Millisecond, func() (bool, string) {
		got := hooks.deliveries()
		return len(got) >= len(ids), fmt.Sprintf("%d deliveries received, want %d: %v", len(got), len(ids), got)
	})
	got := hooks.deliveries()
	if len(got) != len(ids) {
		t.Errorf("%d distinct deliveries received, want one per video (%d): %v", len(got), len(ids), got)
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("delivery %s received %d times, want once", id, n)
		}
	}
	phase("each event delivered once")
}

// allComplete waits until every running kino serve lists the videos
// COMPLETED, then checks that each plays them.
func (c *kinoCluster) allComplete(key string, ids ...string) {
	c.t.Helper()
	for _, n := range c.nodes {
		if n.running() && n.kind == "serve" {
			n.waitListed(key, domain.StatusCompleted, ids...)
		}
	}
	c.playsEverywhere(key, ids...)
}

// playsEverywhere checks that every running kino serve plays the videos.
func (c *kinoCluster) playsEverywhere(key string, ids ...string) {
	c.t.Helper()
	for _, n := range c.nodes {
		if n.running() && n.kind == "serve" {
			n.plays(key, ids...)
		}
	}
}

// plays fetches, through node n, each video's record, then from the media
// URLs n gives: its master playlist, the first rendition's playlist, that
// playlist's first segment and the thumbnail, all non-empty.
func (n *clusterNode) plays(key string, ids ...string) {
	t := n.c.t
	t.Helper()
	// A 503 (the media bucket's replicas electing a leader after a node
	// died) is retried, as a player does; any other failure fails.
	get := func(url string) []byte {
		t.Helper()
		var b []byte
		eventstoretest.EventuallyEvery(t, "the media served", 200*time.Millisecond, func() (bool, string) {
			resp, err := http.Get(url)
			if err != nil {
				t.Fatalf("%s: GET %s: %v", n.name, url, err)
			}
			defer resp.Body.Close()
			b, err = io.ReadAll(resp.Body)
			if resp.StatusCode == http.StatusServiceUnavailable {
				return false, fmt.Sprintf("%s: GET %s: 503 %s", n.name, url, b)
			}
			if err != nil || resp.StatusCode != 200 || len(b) == 0 {
				t.Fatalf("%s: GET %s: %d, %d bytes, %v", n.name, url, resp.StatusCode, len(b), err)
			}
			return true, ""
		})
		return b
	}
	firstURI := func(playlist []byte) string {
		for _, line := range strings.Split(string(playlist), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				return line
			}
		}
		t.Fatalf("%s: playlist lists nothing:\n%s", n.name, playlist)
		return ""
	}
	for _, id := range ids {
		r := n.api.do("GET", "/v1/videos/"+id, key, nil)
		if r.status != 200 {
			t.Fatalf("%s: GET video %s: %d %s", n.name, id, r.status, r.body)
		}
		v := r.json(t)
		master, _ := v["playlistUrl"].(string)
		thumb, _ := v["thumbnailUrl"].(string)
		if _, port, _ := net.SplitHostPort(strings.TrimPrefix(n.api.url, "http://")); !strings.Contains(master, ":"+port+"/cdn/") {
			t.Fatalf("%s: playlistUrl %q is not on this node's /cdn (%s)", n.name, master, n.api.url)
		}
		base := master[:strings.LastIndexByte(master, '/')+1]
		rendition := base + firstURI(get(master))
		seg := rendition[:strings.LastIndexByte(rendition, '/')+1] + firstURI(get(rendition))
		get(seg)
		get(thumb)
	}
}

// waitKey polls until node n's read model knows key (it was issued
// through another node's NATS).
func (n *clusterNode) waitKey(key string) {
	t := n.c.t
	t.Helper()
	eventstoretest.EventuallyEvery(t, "the key and collection served", 50*time.Millisecond, func() (bool, string) {
		r := n.api.do("GET", "/v1/collections/films", key, nil)
		return r.status == 200, fmt.Sprintf("%s does not know the key yet: %d %s", n.name, r.status, r.body)
	})
}

// kino worker with --nats-cluster is a full peer: its embedded node holds a
// replica of the event stream, and it transcodes what is uploaded through
// a kino serve; killed and restarted, it rejoins and goes on.
func TestClusterWorkerNodeIsAFullPeer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts three kino processes")
	}
	c := newMixedCluster(t, []string{"serve", "serve", "worker"},
		"--transcode-ack-wait", "3s", "--transcode-backoff", "100ms", "--webhook-workers", "0")
	// Only the worker transcodes.
	c.nodes[0].flags = []string{"--workers", "0"}
	c.nodes[1].flags = []string{"--workers", "0"}
	c.nodes[2].flags = []string{"--workers", "1"}
	c.start()
	a, b, w := c.nodes[0], c.nodes[1], c.nodes[2]

	s := a.store()
	_, replicas, err := s.StreamLeader(context.Background())
	_ = s.Close()
	if err != nil || len(replicas) != 3 || !slices.Contains(replicas, w.name) {
		t.Fatalf("event stream replicas on %q (%v), want 3 with the worker's node %s", replicas, err, w.name)
	}
	a.cli("accounts", "create", "acme", "--plan", "pro")
	key := lastLine(a.cli("keys", "create", "acme"))
	a.cli("collections", "create", "acme", "films", "Films")
	a.waitKey(key)
	b.waitKey(key)
	short := makeClip(t, "short.mp4", 320, 180, 1, false)
	ids := []string{a.upload(key, "films", "first.mp4", short)}
	b.waitListed(key, domain.StatusCompleted, ids...)

	w.kill()
	w.restart()
	ids = append(ids, b.upload(key, "films", "after-the-worker-came-back.mp4", short))
	a.waitListed(key, domain.StatusCompleted, ids...)
}
