package diskspace

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Reserve is the free space kept on the data directory's file system:
// uploads that would eat into it are refused (507), so the event store
// never runs dry. Bytes, or Percent of the file system's size.
type Reserve struct {
	Bytes   int64
	Percent float64
}

// ParseReserve reads "1GiB", "512MiB", "10%", a byte count, or "0"
// (no reserve).
func ParseReserve(s string) (Reserve, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f < 0 || f >= 100 {
			return Reserve{}, fmt.Errorf("a percentage must be from 0 to 99 (got %q)", s)
		}
		return Reserve{Percent: f}, nil
	}
	num, mult := s, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return Reserve{}, fmt.Errorf("want a size (1GiB, 512MiB, bytes) or a percentage of the disk (5%%), got %q", s)
	}
	return Reserve{Bytes: n * mult}, nil
}

func (r Reserve) String() string {
	if r.Percent > 0 {
		return strconv.FormatFloat(r.Percent, 'f', -1, 64) + "%"
	}
	return strconv.FormatInt(r.Bytes, 10) + " bytes"
}

// Guard measures the room left above the reserve on the file systems of
// Dirs (the NATS store and the media directory: usually one), and keeps
// the ledger of the room that uploads in flight have claimed (Claim):
// copies of a Guard made by NewGuard share it.
type Guard struct {
	Dirs    []string
	Reserve Reserve
	Every   int64 // a Writer checks the room at least each time it has written this much
	claimed *atomic.Int64
	writers *atomic.Int64 // Writers in ReadFrom: they share the room between their checks
}

// NewGuard is a Guard with a ledger of claims.
func NewGuard(dirs []string, r Reserve, every int64) Guard {
	return Guard{Dirs: dirs, Reserve: r, Every: every, claimed: new(atomic.Int64), writers: new(atomic.Int64)}
}

// ClaimWindow is the most a request claims: what it has announced beyond
// that, it may send hours later or never, and a slow client must not hold
// room that others' uploads could use (one account's uploads in flight
// hold at most its concurrent uploads times this). Past its window a
// request has only its writer's checks.
const ClaimWindow = 64 << 20

// ErrNoRoom is what an upload's writer meets when the disk's free space
// falls below the reserve while it streams.
var ErrNoRoom = errors.New("free disk space below the reserve")

// ErrTooBig is Claim's refusal of an announced size the room does not
// hold, while the disk is still above its reserve.
var ErrTooBig = errors.New("the announced size does not fit above the disk's reserve")

// A Claim is room above the reserve that a request in flight announced
// (its Content-Length) and has not written yet: it counts against every
// other request's room until it is written or released. Without it, each
// of several uploads found the same room free, and together they wrote
// into the reserve. A nil Claim claims nothing.
type Claim struct {
	ledger *atomic.Int64
	mu     sync.Mutex
	left   int64
}

// Fits checks that n more bytes (n <= 0: any number) fit above the
// reserve beside what uploads in flight have claimed: ErrNoRoom while the
// disk is inside its reserve, ErrTooBig when n does not fit, statfs's
// error when the room is unknown (the caller logs it and lets the upload
// through).
func (g Guard) Fits(n int64) error {
	room, err := g.Unclaimed()
	switch {
	case err != nil:
		return err
	case room < 0:
		return ErrNoRoom
	case n > room:
		return ErrTooBig
	}
	return nil
}

// Claim is Fits, then claims the first ClaimWindow of the n bytes (n <=
// 0, or a Guard without a ledger: none) for the request about to write
// them; the check and the claim are one step, so two requests at once
// cannot both take the last of the room. Release the claim when the
// request ends.
func (g Guard) Claim(n int64) (*Claim, error) {
	if n <= 0 || g.claimed == nil {
		return nil, g.Fits(n)
	}
	room, err := g.Room()
	if err != nil {
		return nil, err
	}
	take := min(n, ClaimWindow)
	for {
		claimed := g.claimed.Load()
		switch {
		case room-claimed < 0:
			return nil, ErrNoRoom
		case n > room-claimed:
			return nil, ErrTooBig
		}
		if g.claimed.CompareAndSwap(claimed, claimed+take) {
			return &Claim{ledger: g.claimed, left: take}, nil
		}
	}
}

// wrote moves n written bytes off the claim: the disk's free space
// counts them now.
func (c *Claim) wrote(n int64) {
	if c == nil || n <= 0 {
		return
	}
	c.mu.Lock()
	n = min(n, c.left)
	c.left -= n
	c.mu.Unlock()
	c.ledger.Add(-n)
}

// Left is what the claim still holds.
func (c *Claim) Left() int64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.left
}

// Release gives back what the claim still holds. It may be called more
// than once.
func (c *Claim) Release() {
	if c != nil {
		c.wrote(c.Left())
	}
}

// inFlight is how many Writers are in ReadFrom, at least 1.
func (g Guard) inFlight() int64 {
	if g.writers == nil {
		return 1
	}
	return max(g.writers.Load(), 1)
}

// Unclaimed is Room less the room uploads in flight have claimed: what a
// new request may count on.
func (g Guard) Unclaimed() (int64, error) {
	room, err := g.Room()
	if err != nil || g.claimed == nil {
		return room, err
	}
	return room - g.claimed.Load(), nil
}

// Room is the smallest free space above the reserve among the guarded
// file systems, in bytes; negative when one is inside its reserve. With
// no dirs it is effectively unbounded.
func (g Guard) Room() (int64, error) {
	room := int64(1<<63 - 1)
	for _, dir := range g.Dirs {
		avail, total, err := statfs(dir)
		if err == errStatfsUnsupported {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("free space of %s: %w", dir, err)
		}
		reserve := g.Reserve.Bytes
		if g.Reserve.Percent > 0 {
			reserve = int64(float64(total) * g.Reserve.Percent / 100)
		}
		room = min(room, int64(avail)-reserve)
	}
	return room, nil
}

// Writer writes an upload to its file and checks that the disk still has
// room above the reserve, less what other requests have claimed:
// ErrNoRoom when not. It checks at its first write, then after its share
// of a quarter of the room it found (the room over the Writers in
// ReadFrom at the time; at least a Block, at most Guard.Every bytes), so
// that uploads of unknown length, alone or together, stop within a
// little of the reserve however close to it they start. What it writes
// comes off Claim (the request's own, nil for none). Wrap marks the
// errors of W itself (the server's own disk failing). Offset is where in
// the file the first byte goes (a resumed upload's offset; 0 for a new
// file): ReadFrom aligns its writes to it.
type Writer struct {
	W         io.Writer
	Guard     Guard
	Claim     *Claim
	Wrap      func(error) error // nil: W's errors as they are
	Offset    int64
	sinceLast int64
	due       int64 // bytes after the last check that call for the next; 0 before the first
}

// Block is what ReadFrom's writes are made of: each ends on a multiple of
// Block in the file.
const Block = 64 << 10

// ReadFrom copies r to the file as it arrives, in writes of whole Blocks
// (io.Copy to a Writer takes this path): it holds back the part of what
// arrived past the last Block boundary until more completes it, and
// writes everything once r ends or fails. A socket hands out whatever has
// arrived; written as it comes, most writes stop inside a page, and the
// page cache zeroes the rest of that page before the next write fills it
// again, and builds its folios from the small pieces: a 2 GiB upload went
// at half the speed of the same bytes written in aligned 64 KiB blocks,
// with more CPU in the kernel than in the copy itself (docs/performance.md).
// What is held back is less than a Block, in memory for as long as the
// client pauses, and written before ReadFrom returns, whatever the reason.
func (rw *Writer) ReadFrom(r io.Reader) (int64, error) {
	if w := rw.Guard.writers; w != nil {
		w.Add(1)
		defer w.Add(-1)
	}
	buf := make([]byte, 2*Block) // a Block held back and the next read
	var total int64
	held := 0
	for {
		n, err := r.Read(buf[held:])
		held += n
		end := held - int((rw.Offset+int64(held))%Block)
		if err != nil {
			end = held
		}
		if end > 0 {
			w, werr := rw.Write(buf[:end])
			total += int64(w)
			if werr != nil {
				return total, werr
			}
			held = copy(buf, buf[end:held])
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func (rw *Writer) Write(p []byte) (int, error) {
	if rw.sinceLast += int64(len(p)); rw.sinceLast >= rw.due {
		rw.sinceLast = 0
		rw.due = rw.Guard.Every
		if room, err := rw.Guard.Unclaimed(); err == nil {
			room += rw.Claim.Left() // its own claim is its to write
			if room < 0 {
				return 0, ErrNoRoom
			}
			rw.due = min(max(room/(4*rw.Guard.inFlight()), Block), max(rw.Guard.Every, Block))
		}
	}
	n, err := rw.W.Write(p)
	rw.Offset += int64(n)
	rw.Claim.wrote(int64(n))
	if err != nil && rw.Wrap != nil {
		err = rw.Wrap(err)
	}
	return n, err
}
