package chaos

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A TestRow is a row of the table measured by a test of another package, one that needs a
// fleet this package does not start (with a Gateway and Traefik, or real Ray). `make
// chaos` runs that test with -v and hands its output to this package, which makes the row from
// the test's verdict and its FIGURE line (see FromTestLog): no row is copied by hand.
type TestRow struct {
	// Order, Scenario, Done and Checked are the row's (see Result); Done and Checked may name a
	// value of the FIGURE line as {key}, rendered as the line has it.
	Order                   int
	Scenario, Done, Checked string
	// Package is the test's package, e.g. e2e/bluegreen.
	Package string
	// Test is the test's name as `go test -v` prints it in `--- PASS: <Test> (…)`.
	Test string
	// Figure names the test's FIGURE line (`FIGURE <Figure> key=value …`).
	Figure string
	// Figures are the row's figures: the FIGURE line's values by key, labelled, in this order.
	Figures []Label
}

// Label names a FIGURE line's value in the table.
type Label struct {
	Key, Name string
}

// TestLog is what the rows need of a `go test -v` run's output.
type TestLog struct {
	// Verdicts are the tests' `--- PASS/FAIL/SKIP` lines, by test name.
	Verdicts map[string]Verdict
	// Figures are the FIGURE lines' values by line name, then key; a name printed twice keeps
	// the last line.
	Figures map[string]map[string]string
}

// Verdict is one test's outcome: PASS, FAIL or SKIP, and how long it ran.
type Verdict struct {
	Outcome  string
	Duration time.Duration
}

// verdictLine matches `go test -v`'s verdict of a test, indented for a subtest.
var verdictLine = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)`)

// figureMark starts a FIGURE line in a test's log output (after t.Log's file:line prefix).
const figureMark = "FIGURE "

// ParseTestLog reads a `go test -v` run's output.
func ParseTestLog(r io.Reader) (TestLog, error) {
	log := TestLog{Verdicts: map[string]Verdict{}, Figures: map[string]map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if m := verdictLine.FindStringSubmatch(line); m != nil {
			secs, err := strconv.ParseFloat(m[3], 64)
			if err != nil {
				return TestLog{}, fmt.Errorf("the duration in %q: %w", line, err)
			}
			log.Verdicts[m[2]] = Verdict{Outcome: m[1], Duration: time.Duration(secs * float64(time.Second))}
			continue
		}
		i := strings.Index(line, figureMark)
		if i < 0 {
			continue
		}
		fields := strings.Fields(line[i+len(figureMark):])
		if len(fields) == 0 {
			continue
		}
		values := map[string]string{}
		for _, f := range fields[1:] {
			if k, v, ok := strings.Cut(f, "="); ok {
				values[k] = v
			}
		}
		log.Figures[fields[0]] = values
	}
	if err := sc.Err(); err != nil {
		return TestLog{}, fmt.Errorf("reading the test log: %w", err)
	}
	return log, nil
}

// FromTestLog makes the rows' results from a test log. A row passes only when its test
// passed and printed every value the row names; otherwise it fails saying why, so a test that
// did not run, or whose FIGURE line no longer matches the row, shows in the table. Lost is 0:
// the tests fail when a copy or RayCluster is replaced, which the verdict shows.
func FromTestLog(rows []TestRow, log TestLog) []Result {
	out := make([]Result, 0, len(rows))
	for _, row := range rows {
		values := log.Figures[row.Figure]
		var missing []string
		fill := func(text string) string { return fillIn(text, values) }
		r := Result{Order: row.Order, Scenario: row.Scenario, Done: fill(row.Done), Checked: fill(row.Checked)}
		for _, l := range row.Figures {
			v, ok := values[l.Key]
			if !ok {
				missing = append(missing, l.Key)
				continue
			}
			r.Figures = append(r.Figures, Figure{Name: l.Name, Value: v})
		}
		missing = append(missing, placeholders(row.Done+row.Checked, values)...)
		v, ran := log.Verdicts[row.Test]
		r.Duration = v.Duration
		switch {
		case !ran:
			r.Failure = "no verdict of " + row.Test + " in the test log: it did not run"
		case v.Outcome == "SKIP":
			r.Failure = row.Test + " was skipped"
		case v.Outcome != "PASS":
			r.Failure = "see " + row.Test + "'s log"
		case values == nil:
			r.Failure = row.Test + " printed no FIGURE " + row.Figure + " line"
		case len(missing) > 0:
			r.Failure = "FIGURE " + row.Figure + " lacks " + strings.Join(missing, ", ")
		default:
			r.Passed = true
		}
		out = append(out, r)
	}
	return out
}

// placeholder is a {key} in a row's text.
var placeholder = regexp.MustCompile(`\{([a-z0-9_]+)\}`)

// placeholders are the keys text names that values lacks.
func placeholders(text string, values map[string]string) []string {
	var out []string
	for _, m := range placeholder.FindAllStringSubmatch(text, -1) {
		if _, ok := values[m[1]]; !ok {
			out = append(out, m[1])
		}
	}
	return out
}

// fillIn replaces each {key} in text with its value, or with "?" when values lacks it (a test
// that failed before printing its FIGURE line).
func fillIn(text string, values map[string]string) string {
	return placeholder.ReplaceAllStringFunc(text, func(m string) string {
		if v, ok := values[m[1:len(m)-1]]; ok {
			return v
		}
		return "?"
	})
}

// FigureLine is the FIGURE line a test logs for its row: name, then key=value pairs in the order
// given, durations in seconds to a tenth, as FromTestLog reads them back.
func FigureLine(name string, kv ...any) string {
	var b strings.Builder
	b.WriteString("FIGURE " + name)
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		if d, ok := v.(time.Duration); ok {
			v = fmt.Sprintf("%.1fs", d.Seconds())
		}
		fmt.Fprintf(&b, " %v=%v", kv[i], v)
	}
	return b.String()
}
