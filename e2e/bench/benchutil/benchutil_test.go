package benchutil

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// auditLine is one audit event as the API server writes it (the fields CountWrites reads).
func auditLine(stage, user, verb, resource, sub string, code int, at time.Time) string {
	return fmt.Sprintf(`{"kind":"Event","stage":%q,"verb":%q,"user":{"username":%q},`+
		`"objectRef":{"resource":%q,"subresource":%q},"responseStatus":{"code":%d},"stageTimestamp":%q}`,
		stage, verb, user, resource, sub, code, at.Format(time.RFC3339Nano))
}

func TestCountWrites(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	lines := []string{
		auditLine("ResponseComplete", "spoke", "create", "pods", "", 201, at(1)),
		auditLine("ResponseComplete", "spoke", "patch", "rayservices", "status", 200, at(2)),
		auditLine("ResponseComplete", "spoke", "update", "rayservices", "status", 409, at(3)),
		auditLine("ResponseComplete", "spoke", "create", "events", "", 403, at(4)),
		auditLine("ResponseStarted", "spoke", "create", "pods", "", 201, at(5)),
		auditLine("ResponseComplete", "someone-else", "create", "pods", "", 201, at(5)),
		auditLine("ResponseComplete", "spoke", "delete", "rayclusters", "", 200, at(6)),
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		window Window
		split  time.Time
		want   WriteCounts
	}{
		{
			name:  "whole log, split after the second write",
			split: at(2),
			want: WriteCounts{
				ByKey: map[WriteKey]int{
					{"pods", "create"}: 1, {"rayservices/status", "patch"}: 1, {"rayservices/status", "update"}: 1,
					{"events", "create"}: 1, {"rayclusters", "delete"}: 1,
				},
				Total: 5, BeforeSplit: 2, Status: 2, Conflicts: 1, Failed: 1,
				Failures: map[string]int{"rayservices/status update 409": 1, "events create 403": 1},
			},
		},
		{
			name:   "window from exclusive to inclusive",
			window: Window{From: at(2), To: at(4)},
			split:  at(0),
			want: WriteCounts{
				ByKey: map[WriteKey]int{{"rayservices/status", "update"}: 1, {"events", "create"}: 1},
				Total: 2, BeforeSplit: 0, Status: 1, Conflicts: 1, Failed: 1,
				Failures: map[string]int{"rayservices/status update 409": 1, "events create 403": 1},
			},
		},
		{
			name:   "empty window",
			window: Window{From: at(6)},
			want:   WriteCounts{ByKey: map[WriteKey]int{}, Failures: map[string]int{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CountWrites(path, "spoke", tt.window, tt.split)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CountWrites (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("sorted keys", func(t *testing.T) {
		wc := WriteCounts{ByKey: map[WriteKey]int{{"b", "create"}: 1, {"a", "patch"}: 1, {"c", "create"}: 3}}
		want := []WriteKey{{"c", "create"}, {"a", "patch"}, {"b", "create"}}
		if diff := cmp.Diff(want, wc.SortedKeys()); diff != "" {
			t.Errorf("SortedKeys (-want +got):\n%s", diff)
		}
	})
	t.Run("malformed log", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.log")
		if err := os.WriteFile(bad, []byte("{not json\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := CountWrites(bad, "spoke", Window{}, time.Time{}); err == nil {
			t.Error("CountWrites of a malformed log succeeded")
		}
	})
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{name: "empty", q: 0.5, want: 0},
		{name: "one", sorted: ms(7), q: 0.99, want: 7 * time.Millisecond},
		{name: "median of four is the second", sorted: ms(1, 2, 3, 4), q: 0.5, want: 2 * time.Millisecond},
		{name: "p99 of a hundred is the 99th", sorted: ms(seq(100)...), q: 0.99, want: 99 * time.Millisecond},
		{name: "max", sorted: ms(1, 2, 3), q: 1, want: 3 * time.Millisecond},
		{name: "zero quantile is the minimum", sorted: ms(5, 6), q: 0, want: 5 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.q); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.sorted, tt.q, got, tt.want)
			}
		})
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

func TestReconcileTotals(t *testing.T) {
	const exposition = `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="raycluster",result="requeue_after"} 12
controller_runtime_reconcile_total{controller="rayservice",result="error"} 2
controller_runtime_reconcile_total{controller="rayservice",result="requeue_after"} 30
controller_runtime_reconcile_total{controller="rayservice",result="success"} 1
controller_runtime_reconcile_errors_total{controller="rayservice"} 2
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(exposition))
	}))
	defer srv.Close()
	tests := []struct {
		controller string
		want       map[string]float64
	}{
		{controller: "rayservice", want: map[string]float64{"error": 2, "requeue_after": 30, "success": 1}},
		{controller: "raycluster", want: map[string]float64{"requeue_after": 12}},
		{controller: "rayjob", want: map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.controller, func(t *testing.T) {
			got, err := ReconcileTotals(context.Background(), srv.URL, tt.controller)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ReconcileTotals (-want +got):\n%s", diff)
			}
			if want := Sum(tt.want); Sum(got) != want {
				t.Errorf("Sum = %v, want %v", Sum(got), want)
			}
		})
	}
}

func TestReadiness(t *testing.T) {
	t0 := time.Now()
	r := NewReadiness(2)
	r.MarkCreated("a", t0)
	r.MarkCreated("b", t0.Add(time.Second))
	r.MarkReady("a", t0.Add(3*time.Second))
	r.MarkReady("a", t0.Add(9*time.Second)) // a repeat changes nothing
	select {
	case <-r.AllDone():
		t.Fatal("AllDone closed with one of two ready")
	default:
	}
	r.MarkReady("b", t0.Add(2*time.Second))
	select {
	case <-r.AllDone():
	default:
		t.Fatal("AllDone still open with both ready")
	}
	lat, last := r.Latencies()
	if diff := cmp.Diff([]time.Duration{time.Second, 3 * time.Second}, lat); diff != "" {
		t.Errorf("Latencies (-want +got):\n%s", diff)
	}
	if !last.Equal(t0.Add(3 * time.Second)) {
		t.Errorf("last ready at %v, want %v", last, t0.Add(3*time.Second))
	}
	if r.ReadyCount() != 2 {
		t.Errorf("ReadyCount = %d, want 2", r.ReadyCount())
	}
}
