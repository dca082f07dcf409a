package httpapi

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// parallel is how many tests marked t.Parallel run at once here unless
// -test.parallel says otherwise: each runs on its own NATS server and API,
// and most of their time is waiting (on writes, on timeouts, on outages
// they cause), not computing.
const parallel = 4

func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", fmt.Sprint(parallel))
	}
	os.Exit(m.Run())
}
