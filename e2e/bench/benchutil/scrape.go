package benchutil

import (
	"context"
	"fmt"
	"net/http"
)

// Scrape sums, for each of names (e.g. "workqueue_depth"), the samples of that metric in a
// manager's metrics endpoint whose labels include match: a gauge's current value, a counter's
// or a histogram's _sum and _count so far.
func Scrape(ctx context.Context, url string, match map[string]string, names ...string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	out := make(map[string]float64, len(names))
	for _, name := range names {
		out[name] = 0
	}
	err = scanSamples(resp.Body, func(name string, lbls map[string]string, v float64) {
		if _, wanted := out[name]; !wanted {
			return
		}
		for k, want := range match {
			if lbls[k] != want {
				return
			}
		}
		out[name] += v
	})
	return out, err
}
