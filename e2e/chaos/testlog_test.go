package chaos

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// sampleLog is `go test -v` output of e2e/bluegreen's two chaos rows and e2e/fleetray's one
// as `make chaos` runs them: the FIGURE lines as the tests print them through t.Log, amid other lines.
const sampleLog = `=== RUN   TestPartitionKeepsServingMember
    partition_test.go:89: 05:10:01.000: eu partitioned from the hub
    partition_test.go:147: FIGURE partition victim=eu detect_not_ready=12.7s partition=120.0s recover_ready=8.2s requests=5819 failed=0 requests_during=4803 victim_share_during=0.5 route_changes=0 toleration=10.0s failover_after_endpoint_failed=31.2s purged_after_ready=1.0s test=151.3s
--- PASS: TestPartitionKeepsServingMember (151.32s)
=== RUN   TestBlueGreenGreenEndpointFails
    greenfail_test.go:98: FIGURE bluegreen-greenfail detect_route_written=3.5s detect_route_accepted=3.6s window=5.5s last_failure_after_kill=3.5s recover_share_accepted=2.4s detect2_route_written=3.3s detect2_route_accepted=3.4s window2=5.3s last_failure2_after_kill=3.3s kill2_to_reverted=37.9s deadline=45.0s requests=2626 failed_in_windows=77 failed_outside=0
--- PASS: TestBlueGreenGreenEndpointFails (60.05s)
PASS
=== RUN   TestGreenFailsOnRealRay
    greenfail_test.go:83: FIGURE fleetray-greenfail off_routed=6.1s paused_seen=7.0s share_back=48.2s shift_done=95.0s requests=4210 failed_in_window=150 window=6.4s failed_outside=0
--- PASS: TestGreenFailsOnRealRay (140.20s)
PASS
`

func TestParseTestLog(t *testing.T) {
	log, err := ParseTestLog(strings.NewReader(sampleLog + "=== RUN   TestX\n=== RUN   TestX/sub\n    --- SKIP: TestX/sub (0.00s)\n--- FAIL: TestX (1.50s)\n"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]Verdict{
		"TestPartitionKeepsServingMember": {Outcome: "PASS", Duration: 151320 * time.Millisecond},
		"TestBlueGreenGreenEndpointFails": {Outcome: "PASS", Duration: 60050 * time.Millisecond},
		"TestX/sub":                       {Outcome: "SKIP"},
		"TestX":                           {Outcome: "FAIL", Duration: 1500 * time.Millisecond},
	} {
		if got := log.Verdicts[name]; got != want {
			t.Errorf("verdict of %s = %+v, want %+v", name, got, want)
		}
	}
	if got := log.Figures["partition"]["detect_not_ready"]; got != "12.7s" {
		t.Errorf("partition's detect_not_ready = %q, want 12.7s", got)
	}
	if got := log.Figures["bluegreen-greenfail"]["failed_outside"]; got != "0" {
		t.Errorf("bluegreen-greenfail's failed_outside = %q, want 0", got)
	}
}

// TestGatewayRowsFromTestLog renders rows 8, 10 and 11 from the sample log as `make chaos` does:
// each row's figures and texts come from its FIGURE line.
func TestGatewayRowsFromTestLog(t *testing.T) {
	log, err := ParseTestLog(strings.NewReader(sampleLog))
	if err != nil {
		t.Fatal(err)
	}
	rows := FromTestLog(GatewayRows, log)
	for _, r := range rows {
		if !r.Passed {
			t.Errorf("row %d failed: %s", r.Order, r.Failure)
		}
	}
	var out strings.Builder
	h := Header{Commit: "abc", Date: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), CPUs: 2, Command: "make chaos"}
	if err := Render(&out, h, rows, Notes); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"| 8 | partition between hub and member | a RayService on 2 of 3 members (no rollout; failover toleration 10.0s)",
		"for 120.0s, while the member",
		"| partitioned member: eu; detect (partition → not Ready on the hub): 12.7s; partition: 120.0s; " +
			"recover (heal → Ready on the hub, at the next membership probe): 8.2s; route changes: 0; requests: 5819; " +
			"requests during the partition: 4803; share of those the partitioned member answered: 0.5; failed: 0; " +
			"second partition: endpoint failed → replacement Ready: 31.2s; Ready on the hub again → copy deleted: 1.0s | 0 | passed (2m31s) |",
		"| 10 | green's serve endpoint killed mid-shift | blue/green (step 25 % every 10 s, progress deadline 45.0s)",
		"second failure → reverted: 37.9s; requests: 2626; failed in the windows: 77; failed outside them: 0 | 0 | passed (1m0s) |",
		"| 11 | green's Ray head killed mid-shift (real Ray) |",
		"detect (kill → Traefik routing without green): 6.1s;",
		"3 of 3 scenarios passed; member workloads lost in all: 0.",
		"## Beyond the table",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "{") {
		t.Errorf("a placeholder left in the table:\n%s", got)
	}
}

func TestFromTestLogFails(t *testing.T) {
	row := TestRow{Order: 8, Scenario: "s", Test: "TestA", Figure: "a", Done: "for {span}",
		Figures: []Label{{Key: "detect", Name: "detect"}}}
	for _, tc := range []struct {
		name, log, failure string
	}{
		{name: "not run", log: "", failure: "no verdict of TestA in the test log: it did not run"},
		{name: "skipped", log: "--- SKIP: TestA (0.00s)\n", failure: "TestA was skipped"},
		{name: "failed", log: "    a_test.go:1: FIGURE a detect=1.0s span=2.0s\n--- FAIL: TestA (3.00s)\n",
			failure: "see TestA's log"},
		{name: "no FIGURE line", log: "--- PASS: TestA (3.00s)\n", failure: "TestA printed no FIGURE a line"},
		{name: "a figure missing", log: "    a_test.go:1: FIGURE a span=2.0s\n--- PASS: TestA (3.00s)\n",
			failure: "FIGURE a lacks detect"},
		{name: "a placeholder's value missing", log: "    a_test.go:1: FIGURE a detect=1.0s\n--- PASS: TestA (3.00s)\n",
			failure: "FIGURE a lacks span"},
		{name: "passed", log: "    a_test.go:1: FIGURE a detect=1.0s span=2.0s\n--- PASS: TestA (3.00s)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, err := ParseTestLog(strings.NewReader(tc.log))
			if err != nil {
				t.Fatal(err)
			}
			r := FromTestLog([]TestRow{row}, log)[0]
			if r.Failure != tc.failure || r.Passed != (tc.failure == "") {
				t.Errorf("passed %v, failure %q; want failure %q", r.Passed, r.Failure, tc.failure)
			}
			if want := map[bool]string{true: "for 2.0s", false: "for ?"}[strings.Contains(tc.log, "span=")]; r.Done != want {
				t.Errorf("done %q, want %q", r.Done, want)
			}
		})
	}
}

// TestGatewayRowsMatchTheTests reads the rows' packages' sources: every key a row names is a
// key its test's FIGURE line prints, so that renaming one there fails here, not in `make chaos`.
func TestGatewayRowsMatchTheTests(t *testing.T) {
	literal := regexp.MustCompile(`"([a-z0-9_-]+)"`)
	for _, row := range GatewayRows {
		src := packageTests(t, row.Package)
		call := `chaos.FigureLine("` + row.Figure + `",`
		i := strings.Index(src, call)
		if i < 0 {
			t.Errorf("row %d: no %s) in %s", row.Order, call, row.Package)
			continue
		}
		rest := src[i+len(call):]
		end := strings.Index(rest, "))\n")
		if end < 0 {
			t.Fatalf("row %d: the end of %s)", row.Order, call)
		}
		keys := map[string]string{}
		for _, m := range literal.FindAllStringSubmatch(rest[:end], -1) {
			keys[m[1]] = "x"
		}
		var named []string
		for _, l := range row.Figures {
			named = append(named, l.Key)
		}
		named = append(named, placeholders(row.Done+row.Checked, nil)...)
		for _, k := range named {
			if keys[k] == "" {
				t.Errorf("row %d names %s, which %s) does not print", row.Order, k, call)
			}
		}
	}
}

// packageTests is the source of pkg's tests (pkg as e2e/bluegreen).
func packageTests(t *testing.T, pkg string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", strings.TrimPrefix(pkg, "e2e/"), "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s's tests: %v (%d files)", pkg, err, len(files))
	}
	var src strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	return src.String()
}

// TestFigureLineParses reads a FigureLine back as ParseTestLog does.
func TestFigureLineParses(t *testing.T) {
	line := FigureLine("row", "detect", 3250*time.Millisecond, "requests", 12, "victim", "eu")
	if want := "FIGURE row detect=3.2s requests=12 victim=eu"; line != want && line != "FIGURE row detect=3.3s requests=12 victim=eu" {
		t.Fatalf("FigureLine = %q, want %q", line, want)
	}
	log, err := ParseTestLog(strings.NewReader("    x_test.go:1: " + line + "\n--- PASS: TestRow (1.00s)\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := log.Figures["row"]; got["requests"] != "12" || got["victim"] != "eu" || got["detect"] == "" {
		t.Errorf("figures read back = %v", got)
	}
}
