// Package monitoring reads, for tests, the PromQL of the hub chart's Grafana dashboards
// (charts/rayfleet-hub/dashboards) and alert rules (charts/rayfleet-hub/alerts), so that the
// chart tests can parse it with promtool and the e2e tests can run it against a Prometheus
// scraping a running fleet. It does not parse PromQL itself: that is Prometheus' job.
package monitoring

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Where the hub chart keeps them, relative to the chart's directory.
const (
	DashboardsDir = "dashboards"
	RulesFile     = "alerts/rayfleet-hub.rules.yaml"
)

// Grafana's built-in interval variables and the values they are given here: a rate window
// covering a few scrapes of a test's fast scrape interval, and a range as long as a test.
var builtinVariables = map[string]string{
	"__rate_interval": "1m",
	"__interval":      "15s",
	"__range":         "1h",
}

// variable matches a Grafana variable reference: $name, ${name} or ${name:format}.
var variable = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)`)

// labelValues matches a Grafana label_values(selector, label) variable query.
var labelValues = regexp.MustCompile(`^\s*label_values\(\s*(.+)\s*,\s*\w+\s*\)\s*$`)

// Expr is one PromQL expression and where it comes from.
type Expr struct {
	// Source names it: "<dashboard file>: <panel title> [<refId>]", "<dashboard file>:
	// variable <name>", or "alert <name>".
	Source string
	// Expr is the expression, Grafana's variables substituted (see Substitute).
	Expr string
	// Alert is set on the expressions of alert rules.
	Alert bool
}

// Substitute replaces Grafana's variables in expr: the built-in intervals by fixed durations,
// every dashboard variable by ".*", which is what "All" means for the regex matchers the
// dashboards use them in.
func Substitute(expr string) string {
	return variable.ReplaceAllStringFunc(expr, func(ref string) string {
		m := variable.FindStringSubmatch(ref)
		name := m[1] + m[2]
		if v, ok := builtinVariables[name]; ok {
			return v
		}
		return ".*"
	})
}

// dashboard is the part of a Grafana dashboard's JSON that holds PromQL.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// Dashboards returns the expressions of every dashboard in chartDir's dashboards directory:
// each panel target's, and each query variable's selector. A dashboard file that is not JSON,
// a panel target without an expression or a query variable that is not label_values is an
// error.
func Dashboards(chartDir string) ([]Expr, error) {
	files, err := filepath.Glob(filepath.Join(chartDir, DashboardsDir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no dashboards in %s", filepath.Join(chartDir, DashboardsDir))
	}
	sort.Strings(files)
	var out []Expr
	for _, f := range files {
		exprs, err := dashboardExprs(f)
		if err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", f, err)
		}
		out = append(out, exprs...)
	}
	return out, nil
}

func dashboardExprs(file string) ([]Expr, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	base := filepath.Base(file)
	var out []Expr
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			// A plain string query.
			if err := json.Unmarshal(v.Query, &q.Query); err != nil {
				return nil, fmt.Errorf("variable %s: %w", v.Name, err)
			}
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			return nil, fmt.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q.Query)
		}
		out = append(out, Expr{Source: fmt.Sprintf("%s: variable %s", base, v.Name), Expr: Substitute(m[1])})
	}
	var walk func(ps []panel) error
	walk = func(ps []panel) error {
		for _, p := range ps {
			if err := walk(p.Panels); err != nil {
				return err
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					return fmt.Errorf("panel %q target %s has no expression", p.Title, tg.RefID)
				}
				out = append(out, Expr{Source: fmt.Sprintf("%s: %s [%s]", base, p.Title, tg.RefID), Expr: Substitute(tg.Expr)})
			}
		}
		return nil
	}
	if err := walk(d.Panels); err != nil {
		return nil, err
	}
	return out, nil
}

// RuleGroups is a Prometheus rules file.
type RuleGroups struct {
	Groups []RuleGroup `json:"groups"`
}

// RuleGroup is one group of a rules file.
type RuleGroup struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

// Rule is an alerting or recording rule.
type Rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Rules reads chartDir's alert rules file.
func Rules(chartDir string) (RuleGroups, error) {
	var g RuleGroups
	data, err := os.ReadFile(filepath.Join(chartDir, RulesFile))
	if err != nil {
		return g, err
	}
	if err := yaml.UnmarshalStrict(data, &g); err != nil {
		return g, fmt.Errorf("%s: %w", RulesFile, err)
	}
	return g, nil
}

// AlertExprs returns the expressions of chartDir's alert rules.
func AlertExprs(chartDir string) ([]Expr, error) {
	g, err := Rules(chartDir)
	if err != nil {
		return nil, err
	}
	var out []Expr
	for _, grp := range g.Groups {
		for _, r := range grp.Rules {
			out = append(out, Expr{Source: "alert " + r.Alert, Expr: r.Expr, Alert: true})
		}
	}
	return out, nil
}

// RecordingRules returns exprs as a rules file of recording rules, one per expression, for
// `promtool check rules` to parse (and a Prometheus to evaluate).
func RecordingRules(exprs []Expr) ([]byte, error) {
	g := RuleGroup{Name: "expressions"}
	for i, e := range exprs {
		g.Rules = append(g.Rules, Rule{Record: fmt.Sprintf("expression:%d", i), Expr: e.Expr})
	}
	return yaml.Marshal(RuleGroups{Groups: []RuleGroup{g}})
}

// MetricNames returns, per expression, the metric names it selects, as the promql-names tool
// (e2e/tools/promql, Prometheus' own parser) at path finds them. An expression that does not
// parse, or a selector without a metric name, is an error naming its source.
func MetricNames(path string, exprs []Expr) ([][]string, error) {
	in := make([]string, len(exprs))
	for i, e := range exprs {
		in[i] = e.Expr
	}
	body, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path)
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var results []struct {
		Names []string `json:"names"`
		Error string   `json:"error"`
	}
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(exprs) {
		return nil, fmt.Errorf("%s: %v, %d results for %d expressions: %v: %s", path, runErr, len(results), len(exprs), err, stderr.String())
	}
	names := make([][]string, len(exprs))
	var errs []error
	for i, r := range results {
		if r.Error != "" {
			errs = append(errs, fmt.Errorf("%s: %q: %s", exprs[i].Source, exprs[i].Expr, r.Error))
		}
		names[i] = r.Names
	}
	return names, errors.Join(errs...)
}
