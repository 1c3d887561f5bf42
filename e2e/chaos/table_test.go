package chaos

import (
	"strings"
	"testing"
	"time"
)

func TestRender(t *testing.T) {
	a := Result{Order: 2, Scenario: "etcd restarted", Done: "stopped | started", Checked: "nothing\ndeleted", Lost: 0,
		Passed: true, Duration: 61 * time.Second}
	a.Add("detect", 1500*time.Microsecond)
	a.Add("writes", 3)
	b := Result{Order: 1, Scenario: "API server down", Lost: 2, Failure: "copy deleted", Duration: time.Minute}
	var out strings.Builder
	err := Render(&out, Header{Commit: "abc", Date: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC), CPUs: 2,
		Command: "make chaos"}, []Result{a, b}, "")
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"| 1 | API server down |  |  |  | 2 | **failed**: copy deleted (1m0s) |",
		`| 2 | etcd restarted | stopped \| started | nothing deleted | detect: 2ms; writes: 3 | 0 | passed (1m1s) |`,
		"1 of 2 scenarios passed; member workloads lost in all: 2.",
		"at commit abc on 2026-11-24T00:00:00Z (2 CPUs)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered table lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "| 1 |") > strings.Index(got, "| 2 |") {
		t.Errorf("rows not ordered by Order:\n%s", got)
	}
}

func TestRenderNotes(t *testing.T) {
	h := Header{Commit: "abc", Date: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC), CPUs: 2, Command: "make chaos"}
	var out strings.Builder
	if err := Render(&out, h, []Result{{Order: 1, Scenario: "a", Passed: true}}, "## Notes\n\n- one\n"); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasSuffix(got, "member workloads lost in all: 0.\n\n## Notes\n\n- one\n") {
		t.Errorf("the notes do not follow the totals:\n%s", got)
	}
}
