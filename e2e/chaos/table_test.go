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

func TestKept(t *testing.T) {
	section := "## Rows run in e2e/bluegreen\n\n| 10 | x |\n"
	for _, tc := range []struct {
		name, previous, want string
	}{
		{name: "no file", previous: "", want: ""},
		{name: "only the generated table", previous: "# Chaos results\n\n| 1 | a |\n", want: ""},
		{name: "a kept section after the table", previous: "# Chaos results\n\n| 1 | a |\n\n" + section, want: section},
		{name: "a heading that only mentions it", previous: "# Chaos results\n\nsee ## Rows run in x\n", want: ""},
		{name: "the file is the section", previous: section, want: section},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Kept(tc.previous); got != tc.want {
				t.Errorf("Kept = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRenderKeepsOtherPackagesRows renders a table over a previous RESULTS.md that has a section
// another package measures, twice in a row, as two `make chaos` runs would: the section comes
// through both unchanged, after the new rows.
func TestRenderKeepsOtherPackagesRows(t *testing.T) {
	section := "## Rows run in e2e/bluegreen\n\nMeasured by hand.\n\n| # | scenario |\n|---|---|\n| 8 | partition |\n| 10 | green fails |\n"
	h := Header{Commit: "abc", Date: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC), CPUs: 2, Command: "make chaos"}
	previous := "# Chaos results\n\n| 1 | old row |\n\n1 of 1 scenarios passed; member workloads lost in all: 0.\n\n" + section
	for run := 1; run <= 2; run++ {
		var out strings.Builder
		if err := Render(&out, h, []Result{{Order: 1, Scenario: "new row", Passed: true}}, Kept(previous)); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if !strings.HasSuffix(got, "\n\n"+section) {
			t.Fatalf("run %d: the kept section is not at the end, unchanged:\n%s", run, got)
		}
		if strings.Contains(got, "old row") || !strings.Contains(got, "| 1 | new row |") {
			t.Fatalf("run %d: the generated rows are not the new ones:\n%s", run, got)
		}
		previous = got
	}
}
