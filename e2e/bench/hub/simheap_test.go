package main

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
)

func TestParseGCLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want gcCycle
		ok   bool
	}{
		{
			name: "a collection the pacer started",
			line: "gc 152 @84.213s 7%: 0.089+41+0.11 ms clock, 0.17+12/40/3.2+0.22 ms cpu, 598->612->301 MB, 604 MB goal, 2 MB stacks, 0 MB globals, 2 P",
			want: gcCycle{n: 152, at: 84213 * time.Millisecond, live: 301, goal: 604, stacks: 2},
			ok:   true,
		},
		{
			name: "a forced collection",
			line: "gc 3 @0.004s 1%: 0.010+0.41+0.003 ms clock, 0.021+0/0.30/0.091+0.006 ms cpu, 4->4->0 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)",
			want: gcCycle{n: 3, at: 4 * time.Millisecond, live: 0, goal: 4, forced: true},
			ok:   true,
		},
		{
			name: "a collection checking for goroutine leaks",
			line: "gc 9 @12.500s 3% (checking for goroutine leaks): 0.05+2.1+0.02 ms clock, 0.1+0.2/1.9/0+0.04 ms cpu, 20->21->11 MB, 22 MB goal, 1 MB stacks, 0 MB globals, 2 P",
			want: gcCycle{n: 9, at: 12500 * time.Millisecond, live: 11, goal: 22, stacks: 1},
			ok:   true,
		},
		{
			name: "a line another write tore in two",
			line: `gc 10 @13.001s 3%: 0.05+{"level":"info","msg":"Reconciling"}`,
		},
		{
			name: "a log line about collections",
			line: "gc finished: nothing to do",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseGCLine(tt.line)
			if ok != tt.ok || got != tt.want {
				t.Errorf("parseGCLine = %+v, %t; want %+v, %t", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseGCTraceSkipsLogsAndKeepsTheLastProcess(t *testing.T) {
	log := strings.Join([]string{
		// An earlier start of the process, which exited before it was ready.
		"gc 1 @0.010s 2%: 0.01+0.5+0.01 ms clock, 0.02+0.1/0.4/0+0.02 ms cpu, 3->3->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P",
		"gc 2 @0.050s 2%: 0.01+0.5+0.01 ms clock, 0.02+0.1/0.4/0+0.02 ms cpu, 4->4->2 MB, 5 MB goal, 0 MB stacks, 0 MB globals, 2 P",
		`{"level":"error","msg":"listen tcp 127.0.0.1:20001: bind: address already in use"}`,
		// The process that ran.
		"gc 1 @0.011s 2%: 0.01+0.5+0.01 ms clock, 0.02+0.1/0.4/0+0.02 ms cpu, 3->3->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P",
		`{"level":"info","logger":"controller-runtime.metrics","msg":"Starting metrics server"}`,
		"gc 2 @1.500s 4%: 0.01+0.5+0.01 ms clock, 0.02+0.1/0.4/0+0.02 ms cpu, 8->9->6 MB, 12 MB goal, 1 MB stacks, 0 MB globals, 2 P",
		"gc 3 @2.250s 4%: 0.01+0.5+0.01 ms clock, 0.02+0.1/0.4/0+0.02 ms cpu, 12->12->7 MB, 14 MB goal, 1 MB stacks, 0 MB globals, 2 P (forced)",
	}, "\n")
	got, err := parseGCTrace(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := []gcCycle{
		{n: 1, at: 11 * time.Millisecond, live: 1, goal: 4},
		{n: 2, at: 1500 * time.Millisecond, live: 6, goal: 12, stacks: 1},
		{n: 3, at: 2250 * time.Millisecond, live: 7, goal: 14, stacks: 1, forced: true},
	}
	if len(got) != len(want) {
		t.Fatalf("parseGCTrace = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("cycle %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// gcTraceHelperEnv makes the test binary, run by TestParseGCTraceOfThisRuntime, collect three
// times and exit. runtime.GC can return while its cycle's trace line is still being written, so
// only the first two are checked: the third starts after the second's line is out.
const gcTraceHelperEnv = "RAYFLEET_BENCH_GCTRACE_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(gcTraceHelperEnv) != "" {
		runtime.GC()
		runtime.GC()
		runtime.GC()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The format is the toolchain's, not a copy of it: the lines of a real runtime, the one this
// test is built with, must parse.
func TestParseGCTraceOfThisRuntime(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), gcTraceHelperEnv+"=1", gcTraceEnv())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("running the helper: %v\n%s", err, stderr.String())
	}
	trace := stderr.String()
	// The last line may be cut short by the exit (see gcTraceHelperEnv).
	if i := strings.LastIndex(trace, "\ngc "); i >= 0 {
		trace = trace[:i+1]
	}
	cycles, err := parseGCTrace(strings.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	// Every line of the trace parses, not only some.
	if lines := strings.Count("\n"+trace, "\ngc "); lines != len(cycles) {
		t.Errorf("%d of %d trace lines parsed:\n%s", len(cycles), lines, trace)
	}
	forced := 0
	for _, c := range cycles {
		if c.forced {
			forced++
		}
	}
	if forced < 2 {
		t.Errorf("%d forced collections parsed, want at least 2; trace:\n%s", forced, trace)
	}
}

func TestHeapSummary(t *testing.T) {
	start := time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)
	s := time.Second
	h := heapTrace{start: start, cycles: []gcCycle{
		{n: 1, at: 1 * s, live: 5, goal: 8},
		{n: 2, at: 12 * s, live: 120, goal: 250, stacks: 3},
		{n: 3, at: 30 * s, live: 200, goal: 410, stacks: 4},
		{n: 4, at: 55 * s, live: 180, goal: 400, stacks: 2},
		{n: 5, at: 80 * s, live: 260, goal: 380, stacks: 6},
		{n: 6, at: 200 * s, live: 900, goal: 1800, stacks: 9}, // after the run's end
	}}
	place := benchutil.Window{From: start.Add(10 * s), To: start.Add(60 * s)}
	got := h.summarize(place, start.Add(100*s))
	want := heapSummary{peakPlace: 200, peakRun: 260, livePlaced: 180, goalRun: 410, stacksAtPeak: 6}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}

	// No collection in placement: nothing to say of it, the run's figures still stand.
	got = h.summarize(benchutil.Window{From: start.Add(2 * s), To: start.Add(5 * s)}, start.Add(100*s))
	if !math.IsNaN(got.peakPlace) || !math.IsNaN(got.livePlaced) || got.peakRun != 260 {
		t.Errorf("summarize with no collection in placement = %+v, want NaN for placement, 260 over the run", got)
	}
}

func TestStartFromProc(t *testing.T) {
	// A command name with spaces and parentheses; starttime is 123456 ticks after boot.
	stat := []byte("4242 (sim hub) (x)) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 40 0 0 20 0 12 0 123456 1234567 890 " +
		"18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0")
	uptime := []byte("1294.56 2400.10\n")
	now := time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)
	got, err := startFromProc(stat, uptime, now)
	if err != nil {
		t.Fatal(err)
	}
	// 1294.56 s since boot now, started at 1234.56 s: 60 s ago.
	if want := now.Add(-60 * time.Second); !got.Equal(want) {
		t.Errorf("startFromProc = %v, want %v", got, want)
	}
	if _, err := startFromProc([]byte("4242 (simhub) S 1"), uptime, now); err == nil {
		t.Error("startFromProc of a short stat: no error")
	}
}

func TestProcessStartOfThisProcess(t *testing.T) {
	got, err := processStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// The test binary started before this test, within the 10 ms the files count in.
	if d := time.Since(got); d < -20*time.Millisecond || d > time.Hour {
		t.Errorf("this process started %v ago, want a moment before now", d)
	}
}
