package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// requestCount is how many requests the API server served for one verb and resource.
type requestCount struct {
	verb, resource string
	n              float64
}

// apiserverRequests scrapes apiserver_request_total and returns the busiest verb/resource pairs
// of the whole run (every client, the spoke's reads included), to show what the API server's
// CPU went to.
func apiserverRequests(ctx context.Context, cfg *rest.Config, top int) ([]requestCount, float64, error) {
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
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		lbls, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		var verb, resource, sub string
		for l := range strings.SplitSeq(lbls, ",") {
			k, val, _ := strings.Cut(l, "=")
			val = strings.Trim(val, `"`)
			switch k {
			case "verb":
				verb = val
			case "resource":
				resource = val
			case "subresource":
				sub = val
			}
		}
		if sub != "" {
			resource += "/" + sub
		}
		counts[[2]string{verb, resource}] += v
		total += v
	}
	out := make([]requestCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, requestCount{verb: k[0], resource: k[1], n: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n > out[j].n })
	if len(out) > top {
		out = out[:top]
	}
	return out, total, sc.Err()
}
