// Command promql-names parses PromQL expressions with Prometheus' own parser and prints the
// metric names each selects, for the tests that check dashboards and alerts against the
// metrics the hub and the spoke expose. It reads a JSON array of expressions on standard input
// and writes a JSON array of {"expr", "names", "error"}, one per expression, in order; it exits
// 1 when any expression fails to parse.
//
// It is its own module so that Prometheus stays out of RayFleet's go.mod; e2e/tools/build.sh
// builds it next to promtool.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// result is what is printed for one expression.
type result struct {
	Expr  string   `json:"expr"`
	Names []string `json:"names"`
	Error string   `json:"error,omitempty"`
}

func main() {
	var exprs []string
	if err := json.NewDecoder(os.Stdin).Decode(&exprs); err != nil {
		fmt.Fprintln(os.Stderr, "promql-names: reading a JSON array of expressions:", err)
		os.Exit(2)
	}
	out := make([]result, 0, len(exprs))
	failed := false
	for _, e := range exprs {
		r := result{Expr: e, Names: []string{}}
		names, err := metricNames(e)
		if err != nil {
			r.Error, failed = err.Error(), true
		} else {
			r.Names = names
		}
		out = append(out, r)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "promql-names:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// metricNames parses expr and returns the sorted names of its selectors; a selector without
// an exact name (only {__name__=~...}) is an error, because nothing could check it exists.
func metricNames(expr string) ([]string, error) {
	ast, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	var unnamed error
	parser.Inspect(ast, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			unnamed = fmt.Errorf("selector %s names no metric", vs)
			return nil
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		return nil
	})
	if unnamed != nil {
		return nil, unnamed
	}
	slices.Sort(names)
	return names, nil
}
