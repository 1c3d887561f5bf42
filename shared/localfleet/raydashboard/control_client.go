package raydashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// controlTimeout bounds one control request; the stand-in answers them without waiting.
const controlTimeout = 10 * time.Second

// maxStateBytes bounds a control answer, which may hold a config of up to maxConfigBytes.
const maxStateBytes = 2 * maxConfigBytes

// ControlClient drives a stand-in running in another process (or this one) through its control
// endpoints: what Cluster does in-process.
type ControlClient struct {
	baseURL string
	http    *http.Client
}

// NewControlClient returns a client of the stand-in at serverURL (what Start returned).
func NewControlClient(serverURL string) *ControlClient {
	return &ControlClient{baseURL: strings.TrimRight(serverURL, "/"), http: &http.Client{Timeout: controlTimeout}}
}

// SetFault replaces the fault of cluster namespace/name; the zero Fault clears it.
func (cc *ControlClient) SetFault(ctx context.Context, namespace, name string, f Fault) error {
	body, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode fault for %s/%s: %w", namespace, name, err)
	}
	return cc.do(ctx, http.MethodPut, cc.clusterURL(namespace, name)+"/fault", body, nil)
}

// State returns the state of cluster namespace/name.
func (cc *ControlClient) State(ctx context.Context, namespace, name string) (*ClusterState, error) {
	var st ClusterState
	if err := cc.do(ctx, http.MethodGet, cc.clusterURL(namespace, name), nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Reset forgets the config and applications of cluster namespace/name (Cluster.Reset).
func (cc *ControlClient) Reset(ctx context.Context, namespace, name string) error {
	return cc.do(ctx, http.MethodPost, cc.clusterURL(namespace, name)+"/reset", nil, nil)
}

// TotalRequests returns the request counts over all clusters, by operation (Op* constants).
func (cc *ControlClient) TotalRequests(ctx context.Context) (map[string]int, error) {
	totals := map[string]int{}
	if err := cc.do(ctx, http.MethodGet, cc.baseURL+controlTotalsPath, nil, &totals); err != nil {
		return nil, err
	}
	return totals, nil
}

// clusterURL is the control URL of cluster namespace/name.
func (cc *ControlClient) clusterURL(namespace, name string) string {
	return cc.baseURL + controlPrefix + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// do sends one control request and decodes a JSON answer into out when out is not nil.
func (cc *ControlClient) do(ctx context.Context, method, target string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("ray dashboard stand-in control: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := cc.http.Do(req)
	if err != nil {
		return fmt.Errorf("ray dashboard stand-in control: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxStateBytes))
	if err != nil {
		return fmt.Errorf("ray dashboard stand-in control: read the answer of %s %s: %w", method, target, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ray dashboard stand-in control: %s %s: HTTP %s: %s", method, target, resp.Status, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("ray dashboard stand-in control: decode the answer of %s %s: %w", method, target, err)
	}
	return nil
}
