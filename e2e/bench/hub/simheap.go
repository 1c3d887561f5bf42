package main

// simhub's live heap, from the Go runtime's own trace of its collections (GODEBUG=gctrace=1,
// which prints one line per collection to stderr and changes nothing else). RSS says what the
// process holds, which with the runtime's defaults is about twice what it keeps alive; the
// live heap after a collection is what the hub's objects and caches take, per RayService.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
)

// gcTraceEnv turns on the runtime's collection trace in a child's environment, keeping the
// GODEBUG settings this process was given.
func gcTraceEnv() string {
	if v := os.Getenv("GODEBUG"); v != "" {
		return "GODEBUG=" + v + ",gctrace=1"
	}
	return "GODEBUG=gctrace=1"
}

// gcCycle is one line of the trace: when the collection started, since the runtime started,
// and the heap it found live, the goal it set for the next one and the goroutine stacks it
// scanned, in MiB (the runtime prints bytes >> 20 and calls it MB).
type gcCycle struct {
	n                  int
	at                 time.Duration
	live, goal, stacks int64
	forced             bool
}

// gcTraceLine matches the line runtime.gcMarkTermination prints (Go 1.26):
//
//	gc 12 @3.456s 2%: 0.01+1.2+0.02 ms clock, 0.1+0.5/2.1/0+0.08 ms cpu, 40->42->21 MB, 44 MB goal, 0 MB stacks, 0 MB globals, 8 P (forced)
//
// with "(checking for goroutine leaks)" between the percentage and the colon when asked for.
var gcTraceLine = regexp.MustCompile(
	`^gc (\d+) @(\d+\.\d+)s \d+%[^:]*: .* ms cpu, \d+->\d+->(\d+) MB, (\d+) MB goal, (\d+) MB stacks, \d+ MB globals, \d+ P( \(forced\))?$`)

// parseGCTrace reads the collections of a log the trace is mixed into (the process's own logs
// go to the same file). A line another write tore in two matches nothing and is skipped. When
// the collection numbers start again (the log holds an earlier start of the process too),
// only the last process's collections are kept.
func parseGCTrace(r io.Reader) ([]gcCycle, error) {
	var cycles []gcCycle
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("gc ")) {
			continue
		}
		c, ok := parseGCLine(string(line))
		if !ok {
			continue
		}
		if len(cycles) > 0 && c.n <= cycles[len(cycles)-1].n {
			cycles = cycles[:0]
		}
		cycles = append(cycles, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the collection trace: %w", err)
	}
	return cycles, nil
}

// parseGCLine parses one trace line; false when it is not one.
func parseGCLine(line string) (gcCycle, bool) {
	m := gcTraceLine.FindStringSubmatch(strings.TrimRight(line, "\r"))
	if m == nil {
		return gcCycle{}, false
	}
	var c gcCycle
	var err error
	ints := []*int64{&c.live, &c.goal, &c.stacks}
	for i, s := range m[3:6] {
		if *ints[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return gcCycle{}, false
		}
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return gcCycle{}, false
	}
	secs, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		return gcCycle{}, false
	}
	c.n, c.at, c.forced = n, time.Duration(math.Round(secs*1e3))*time.Millisecond, m[6] != ""
	return c, true
}

// heapTrace is simhub's collections in one run and when its process started, which places
// them on the wall clock the phases' windows are in.
type heapTrace struct {
	start  time.Time
	cycles []gcCycle
}

// heapSummary is what the report shows of a run's live heap, in MiB; NaN where no collection
// fell in the span asked.
type heapSummary struct {
	// peakPlace and peakRun are the largest live heap in placement and over the run;
	// livePlaced the live heap at placement's last collection.
	peakPlace, peakRun, livePlaced float64
	// goalRun is the largest goal over the run; stacksAtPeak the stacks at peakRun's collection.
	goalRun, stacksAtPeak float64
}

// summarize reads the collections against the placement window and the run's end.
func (h heapTrace) summarize(place benchutil.Window, end time.Time) heapSummary {
	nan := math.NaN()
	s := heapSummary{peakPlace: nan, peakRun: nan, livePlaced: nan, goalRun: nan, stacksAtPeak: nan}
	// above reports whether v is above top, NaN being none yet.
	above := func(v, top float64) bool { return math.IsNaN(top) || v > top }
	for _, c := range h.cycles {
		at := h.start.Add(c.at)
		if at.After(end) {
			break
		}
		live := float64(c.live)
		if above(live, s.peakRun) {
			s.peakRun, s.stacksAtPeak = live, float64(c.stacks)
		}
		if above(float64(c.goal), s.goalRun) {
			s.goalRun = float64(c.goal)
		}
		if at.Before(place.From) || at.After(place.To) {
			continue
		}
		s.livePlaced = live
		if above(live, s.peakPlace) {
			s.peakPlace = live
		}
	}
	return s
}

// readHeapTrace parses the trace in simhub's log.
func readHeapTrace(logPath string, start time.Time) (heapTrace, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return heapTrace{}, fmt.Errorf("opening simhub's log: %w", err)
	}
	defer func() { _ = f.Close() }()
	cycles, err := parseGCTrace(f)
	return heapTrace{start: start, cycles: cycles}, err
}

// clockTicks is USER_HZ, the unit of a process's start time in /proc/<pid>/stat.
const clockTicks = 100

// processStart is when process pid started, on this process's wall clock: its start in ticks
// since boot (/proc/<pid>/stat) against the time since boot now (/proc/uptime), both on the
// boot-time clock, to 10 ms. The runtime's trace counts from its own start a few
// milliseconds later, inside the error the phases' figures can take.
func processStart(pid int) (time.Time, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return time.Time{}, err
	}
	uptime, err := os.ReadFile("/proc/uptime")
	now := time.Now()
	if err != nil {
		return time.Time{}, err
	}
	return startFromProc(stat, uptime, now)
}

// startFromProc computes processStart from the two files' contents read at now.
func startFromProc(stat, uptime []byte, now time.Time) (time.Time, error) {
	// Fields resume after the command name's last ')'; starttime is field 22, the 20th after it.
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return time.Time{}, errors.New("malformed /proc/<pid>/stat")
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 20 {
		return time.Time{}, errors.New("short /proc/<pid>/stat")
	}
	ticks, err := strconv.ParseInt(fields[19], 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("parsing starttime %q: %w", fields[19], err)
	}
	up := strings.Fields(string(uptime))
	if len(up) == 0 {
		return time.Time{}, errors.New("empty /proc/uptime")
	}
	secs, err := strconv.ParseFloat(up[0], 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("parsing /proc/uptime %q: %w", up[0], err)
	}
	since := time.Duration(secs*float64(time.Second)) - time.Duration(ticks)*time.Second/clockTicks
	return now.Add(-since), nil
}
