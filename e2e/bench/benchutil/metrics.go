package benchutil

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// RequestCount is how many requests the API server served for one verb and resource.
type RequestCount struct {
	Verb, Resource string
	N              float64
}

// APIServerRequests scrapes apiserver_request_total and returns the busiest verb/resource pairs
// of the whole run (every client, the spoke's reads included), to show what the API server's
// CPU went to, and the total over all pairs.
func APIServerRequests(ctx context.Context, cfg *rest.Config, top int) ([]RequestCount, float64, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, 0, fmt.Errorf("creating a clientset: %w", err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("scraping the API server's metrics: %w", err)
	}
	counts := map[[2]string]float64{}
	total := 0.0
	err = scanCounter(bytes.NewReader(raw), "apiserver_request_total", func(lbls map[string]string, v float64) {
		resource := lbls["resource"]
		if sub := lbls["subresource"]; sub != "" {
			resource += "/" + sub
		}
		counts[[2]string{lbls["verb"], resource}] += v
		total += v
	})
	out := make([]RequestCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, RequestCount{Verb: k[0], Resource: k[1], N: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].N > out[j].N })
	if len(out) > top {
		out = out[:top]
	}
	return out, total, err
}

// ReconcileTotals scrapes controller_runtime_reconcile_total for one controller (by its name,
// e.g. "raycluster") from a manager's metrics endpoint, by result (success, error, requeue,
// requeue_after).
func ReconcileTotals(ctx context.Context, url, controller string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	totals := map[string]float64{}
	err = scanCounter(resp.Body, "controller_runtime_reconcile_total", func(lbls map[string]string, v float64) {
		if lbls["controller"] == controller {
			totals[lbls["result"]] += v
		}
	})
	return totals, err
}

// Sum adds up the values of a map of totals.
func Sum(m map[string]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}

// scanCounter calls fn for every sample of the named metric in a Prometheus text exposition.
// Label values in these metrics never contain commas or escaped quotes, which keeps the
// parsing to a split.
func scanCounter(r io.Reader, name string, fn func(labels map[string]string, value float64)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	prefix := name + "{"
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		lblsPart, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		lbls := map[string]string{}
		for l := range strings.SplitSeq(lblsPart, ",") {
			k, val, _ := strings.Cut(l, "=")
			lbls[k] = strings.Trim(val, `"`)
		}
		fn(lbls, v)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	return nil
}

// scanSamples calls fn for every labelled sample of a Prometheus text exposition, with the
// metric's name; the label values parse as scanCounter's do.
func scanSamples(r io.Reader, fn func(name string, labels map[string]string, value float64)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), "{")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		lblsPart, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		lbls := map[string]string{}
		for l := range strings.SplitSeq(lblsPart, ",") {
			k, val, _ := strings.Cut(l, "=")
			lbls[k] = strings.Trim(val, `"`)
		}
		fn(name, lbls, v)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading metrics: %w", err)
	}
	return nil
}
