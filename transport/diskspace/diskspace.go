package diskspace

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
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
// Dirs (the NATS store and the media directory: usually one).
type Guard struct {
	Dirs    []string
	Reserve Reserve
	Every   int64 // a Writer checks the room each time it has written this much
}

// ErrNoRoom is what an upload's writer meets when the disk's free space
// falls below the reserve while it streams.
var ErrNoRoom = errors.New("free disk space below the reserve")

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

// Writer writes an upload to its file and checks, every Guard.Every
// bytes, that the disk still has room above the reserve: ErrNoRoom when
// not. Wrap marks the errors of W itself (the server's own disk failing).
// Offset is where in the file the first byte goes (a resumed upload's
// offset; 0 for a new file): ReadFrom aligns its writes to it.
type Writer struct {
	W         io.Writer
	Guard     Guard
	Wrap      func(error) error // nil: W's errors as they are
	Offset    int64
	sinceLast int64
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
	if rw.sinceLast += int64(len(p)); rw.sinceLast >= rw.Guard.Every {
		rw.sinceLast = 0
		if room, err := rw.Guard.Room(); err == nil && room < 0 {
			return 0, ErrNoRoom
		}
	}
	n, err := rw.W.Write(p)
	rw.Offset += int64(n)
	if err != nil && rw.Wrap != nil {
		err = rw.Wrap(err)
	}
	return n, err
}
