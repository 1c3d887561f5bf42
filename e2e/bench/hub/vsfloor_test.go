package main

import (
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// testPair is a pair of runs of 1,000 RayServices: the hub placed in hubPlaced where the floor
// took 100 s, and hubRSS MiB at its peak.
func testPair(hubPlaced time.Duration, hubRSS int64) ratioRun {
	s := time.Second
	start := time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)
	floor := simRun{
		placedIn: 100 * s, placeLat: []time.Duration{40 * s, 90 * s},
		cp:         [numPhases]cpUsage{{100 * s, 20 * s, 60 * s, 20 * s}},
		phasesDone: 1,
	}
	hub := simRun{
		placedIn: hubPlaced, placeLat: []time.Duration{50 * s, 100 * s},
		statusLat: []time.Duration{200 * time.Millisecond, 700 * time.Millisecond},
		changes:   2000, sentIn: 10 * s,
		usageFrom: [numPhases]localcluster.Usage{{}, {CPU: 30 * s}, {CPU: 35 * s}},
		usage: [numPhases]localcluster.Usage{
			{CPU: 30 * s, PeakRSSBytes: 300 << 20}, {CPU: 34 * s, PeakRSSBytes: hubRSS << 20}, {CPU: 36 * s, PeakRSSBytes: hubRSS << 20},
		},
		cpFrom:     [numPhases]cpUsage{{}, {200 * s, 40 * s, 120 * s, 40 * s}},
		cp:         [numPhases]cpUsage{{220 * s, 40 * s, 120 * s, 40 * s}, {206 * s, 41 * s, 128 * s, 41 * s}},
		reconciles: [numPhases]float64{1100, 2000, 10},
		windows: [numPhases]benchutil.Window{
			{From: start, To: start.Add(120 * s)}, {From: start.Add(130 * s), To: start.Add(150 * s)},
			{From: start.Add(160 * s), To: start.Add(190 * s)},
		},
		api: [numPhases]map[string]benchutil.WriteCounts{
			nil, nil, {"hub": {ByKey: map[benchutil.WriteKey]int{{Resource: "leases", Verb: "update"}: 3}}},
		},
		phasesDone: numPhases,
		heap: heapTrace{start: start.Add(-5 * s), cycles: []gcCycle{
			{n: 1, at: 10 * s, live: 100, goal: 200, stacks: 1},
			{n: 2, at: 100 * s, live: 250, goal: 480, stacks: 3},
			{n: 3, at: 180 * s, live: 220, goal: 500, stacks: 2},
		}},
	}
	return ratioRun{floor: floor, hub: hub, loadFloor: 1.5, loadHub: 2.25}
}

// rowOf is the row of the table whose figure is name.
func rowOf(t *testing.T, rows [][]string, name string) []string {
	t.Helper()
	for _, r := range rows {
		if r[0] == name {
			return r
		}
	}
	t.Fatalf("no row %q in\n%v", name, rows)
	return nil
}

func TestRatioTable(t *testing.T) {
	cfg := config{services: 1000, members: 100}
	cfg.sim.statusRate = 200
	tab := ratioTable(cfg, "abc123", []ratioRun{testPair(110*time.Second, 400), testPair(130*time.Second, 480)})
	if !strings.Contains(tab.title, "no GOMEMLIMIT") || !strings.Contains(tab.title, "hub abc123") || !strings.Contains(tab.title, " 2 pairs ") {
		t.Errorf("title %q does not say the hub ran with no GOMEMLIMIT, or which hub", tab.title)
	}
	rows := tab.rows
	if want := []string{"figure", "pair 1", "pair 2", "min / median / max", "target"}; !slices.Equal(rows[0], want) {
		t.Errorf("header = %q, want %q", rows[0], want)
	}
	// The ratios come first, then the absolute figures.
	if rows[1][0] != "placement time, hub / floor (first create -> last member copy)" {
		t.Errorf("first figure %q, want the placement ratio", rows[1][0])
	}
	index := func(name string) int {
		return slices.IndexFunc(rows, func(r []string) bool { return r[0] == name })
	}
	if index("steady: writes to RayServices, bindings, revisions") > index("floor: first create -> last member copy (s)") {
		t.Error("an absolute figure comes before a ratio")
	}
	for _, want := range [][]string{
		{"placement time, hub / floor (first create -> last member copy)", "1.10", "1.30", "1.10 / 1.10 / 1.30", "<= 1.15: met in 1 of 2"},
		// 220 CPU-s in the hub run against 200 in the floor's; the hub's 30 s of them.
		{"control planes' CPU in placement, hub run / floor run", "2.10", "2.10", "2.10 / 2.10 / 2.10", "informative"},
		{"hub CPU in placement / control planes' CPU in placement of the hub run", "0.07", "0.07", "0.07 / 0.07 / 0.07", "informative"},
		{"reconciles per RayService in placement", "1.10", "1.10", "1.10 / 1.10 / 1.10", "<= 1.2: met in 2 of 2"},
		{"hub peak RSS, no GOMEMLIMIT (MiB)", "400", "480", "400 / 400 / 480", "< 500 MB (477 MiB): met in 1 of 2"},
		// The last collection in placement (0-120 s) is at 95 s: 250 MiB for 1,000 RayServices.
		{"live heap per RayService after placement (KiB)", "256.0", "256.0", "256.0 / 256.0 / 256.0", "informative"},
		{"  peak live heap over the run (MiB)", "250", "250", "250 / 250 / 250", ""},
		{"  peak heap goal over the run (MiB)", "500", "500", "500 / 500 / 500", ""},
		{"  goroutine stacks at the run's peak live heap (MiB)", "3", "3", "3 / 3 / 3", ""},
		// Lease writes are not RayService work.
		{"steady: writes to RayServices, bindings, revisions", "0", "0", "0 / 0 / 0", "0: met in 2 of 2"},
		{"floor: highest status-change rate with p99 < 1 s (/s)", notMeasured, notMeasured, notMeasured, ""},
		{"hub status p99 at half that rate (ms)", notMeasured, notMeasured, notMeasured, "< 1000 ms"},
		// 4 s of hub CPU against 16 s of the control planes' in the status phase.
		{"hub CPU per status change / control planes' CPU per status change (%)", "25", "25", "25 / 25 / 25", "<= 25 %: met in 2 of 2"},
		{"hub CPU per status change (ms)", "2.00", "2.00", "2.00 / 2.00 / 2.00", ""},
		{"control planes' CPU per status change (ms)", "8.00", "8.00", "8.00 / 8.00 / 8.00", ""},
		{"hub: status changes sent per second (asked: half the floor's rate, or 200)", "200", "200", "200 / 200 / 200", ""},
		{"hub: status change -> hub p99 (ms)", "700", "700", "700 / 700 / 700", ""},
		{"floor: first create -> last member copy (s)", "100.0", "100.0", "100.0 / 100.0 / 100.0", ""},
		{"load average (1 min) before the hub run", "2.25", "2.25", "2.25 / 2.25 / 2.25", ""},
	} {
		if got := rowOf(t, rows, want[0]); !slices.Equal(got, want) {
			t.Errorf("row %q\n got %q\nwant %q", want[0], got, want)
		}
	}
}

func TestRatioTableWithTheStatusFloorMeasured(t *testing.T) {
	p := testPair(110*time.Second, 400)
	p.statusFloorRate, p.statusP99AtHalf = 180, 650*time.Millisecond
	rows := ratioTable(config{services: 1000}, "abc123", []ratioRun{p}).rows
	for _, want := range [][]string{
		{"floor: highest status-change rate with p99 < 1 s (/s)", "180", "180 / 180 / 180", ""},
		{"hub status p99 at half that rate (ms)", "650", "650 / 650 / 650", "< 1000 ms: met in 1 of 1"},
	} {
		if got := rowOf(t, rows, want[0]); !slices.Equal(got, want) {
			t.Errorf("row %q\n got %q\nwant %q", want[0], got, want)
		}
	}
}

func TestCheckVsFloor(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "vs-floor alone is a scale mode", args: []string{"-vs-floor"}},
		{name: "with results", args: []string{"-sim", "-vs-floor", "-results", "RESULTS.md", "-hub-memory-limit", "0"}},
		{name: "results without vs-floor", args: []string{"-sim", "-results", "RESULTS.md"}, wantErr: "add -vs-floor"},
		{name: "vs-floor with floor", args: []string{"-vs-floor", "-floor"}, wantErr: "drop -floor"},
		{name: "vs-floor under a memory limit", args: []string{"-vs-floor", "-hub-memory-limit", "512Mi"}, wantErr: "drop -hub-memory-limit 512Mi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("bench", flag.ContinueOnError)
			fs.SetOutput(&strings.Builder{})
			c, err := parseArgs(fs, tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("parseArgs(%q) error = %v, want one saying %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !c.sim.enabled || !c.sim.vsFloor || c.reportInterval != simDefaultReportInterval {
				t.Errorf("parseArgs(%q) = sim %t, vs-floor %t, heartbeat %v; want the scale mode and its defaults",
					tt.args, c.sim.enabled, c.sim.vsFloor, c.reportInterval)
			}
		})
	}
}

func TestParseLoadAvg(t *testing.T) {
	got, err := parseLoadAvg([]byte("2.47 1.90 1.62 3/611 123456\n"))
	if err != nil || got != 2.47 {
		t.Errorf("parseLoadAvg = %v, %v; want 2.47", got, err)
	}
	if _, err := parseLoadAvg(nil); err == nil {
		t.Error("parseLoadAvg of nothing: no error")
	}
}
