package eventstoretest

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// SetParallel makes n of a package's parallel tests run at once, unless
// -test.parallel was given; call it from TestMain before m.Run. Tests that
// each start their own NATS server (and API, and ffmpeg) spend most of
// their time waiting (on fsyncs, elections, real-time playback, timeouts
// they cause), so more of them than the machine's cores overlap their
// waits.
func SetParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// Main is a TestMain that only sets the parallel tests (SetParallel) and
// runs the package's tests.
func Main(m *testing.M, parallel int) {
	SetParallel(parallel)
	os.Exit(m.Run())
}
