package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/onsi/gomega"
)

// Prometheus is a running Prometheus's HTTP API, for e2e tests that query what it scraped.
type Prometheus struct {
	// Base is its address, e.g. http://127.0.0.1:9090.
	Base string
}

// get decodes the data of an API response.
func (p *Prometheus) get(g gomega.Gomega, path string, params url.Values, into any) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.Base+path+"?"+params.Encode(), nil)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	g.Expect(json.NewDecoder(resp.Body).Decode(&body)).To(gomega.Succeed())
	g.Expect(body.Status).To(gomega.Equal("success"), "%s %v: %s", path, params, body.Error)
	g.Expect(json.Unmarshal(body.Data, into)).To(gomega.Succeed())
}

// Vector is an instant query's result.
type Vector struct {
	ResultType string `json:"resultType"`
	Result     []struct {
		Metric map[string]string `json:"metric"`
		Value  [2]any            `json:"value"`
	} `json:"result"`
}

// Query runs an instant query; an expression Prometheus refuses fails g.
func (p *Prometheus) Query(g gomega.Gomega, expr string) Vector {
	var v Vector
	p.get(g, "/api/v1/query", url.Values{"query": {expr}}, &v)
	return v
}

// Count is the number of samples expr returns now (a scalar counts as one).
func (p *Prometheus) Count(g gomega.Gomega, expr string) int {
	v := p.Query(g, expr)
	if v.ResultType == "scalar" {
		return 1
	}
	return len(v.Result)
}

// Value is the single sample of expr, or fails g.
func (p *Prometheus) Value(g gomega.Gomega, expr string) float64 {
	v := p.Query(g, expr)
	g.Expect(v.Result).To(gomega.HaveLen(1), "samples of %s", expr)
	var f float64
	_, err := fmt.Sscan(fmt.Sprint(v.Result[0].Value[1]), &f)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return f
}

// Names are the metric names Prometheus holds series of (a histogram's as its _bucket, _count
// and _sum).
func (p *Prometheus) Names(g gomega.Gomega) map[string]bool {
	return p.LabelValues(g, "__name__")
}

// LabelValues are the values label takes in the series Prometheus holds.
func (p *Prometheus) LabelValues(g gomega.Gomega, label string) map[string]bool {
	var values []string
	p.get(g, "/api/v1/label/"+label+"/values", url.Values{}, &values)
	out := map[string]bool{}
	for _, v := range values {
		out[v] = true
	}
	return out
}

// RuleState is an alerting rule's evaluation state.
type RuleState struct {
	Name      string `json:"name"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

// Rules are the alerting rules Prometheus evaluates, with their health.
func (p *Prometheus) Rules(g gomega.Gomega) []RuleState {
	var data struct {
		Groups []struct {
			Rules []RuleState `json:"rules"`
		} `json:"groups"`
	}
	p.get(g, "/api/v1/rules", url.Values{"type": {"alert"}}, &data)
	var out []RuleState
	for _, grp := range data.Groups {
		out = append(out, grp.Rules...)
	}
	return out
}

// Target is one of the scrape targets Prometheus discovered and kept.
type Target struct {
	Labels    map[string]string `json:"labels"`
	ScrapeURL string            `json:"scrapeUrl"`
	Health    string            `json:"health"`
	LastError string            `json:"lastError"`
}

// Targets are the active scrape targets.
func (p *Prometheus) Targets(g gomega.Gomega) []Target {
	var data struct {
		ActiveTargets []Target `json:"activeTargets"`
	}
	p.get(g, "/api/v1/targets", url.Values{"state": {"active"}}, &data)
	return data.ActiveTargets
}
