package benchutil

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScrape(t *testing.T) {
	const exposition = `# HELP workqueue_depth Current depth of workqueue
# TYPE workqueue_depth gauge
workqueue_depth{controller="hub-rayservice",name="hub-rayservice",priority="0"} 9901
workqueue_depth{controller="orphan-sweep",name="orphan-sweep",priority="0"} 3
workqueue_queue_duration_seconds_sum{controller="hub-rayservice",name="hub-rayservice"} 8.5e+02
workqueue_queue_duration_seconds_count{controller="hub-rayservice",name="hub-rayservice"} 100
workqueue_queue_duration_seconds_bucket{controller="hub-rayservice",name="hub-rayservice",le="1"} 40
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(exposition))
	}))
	defer srv.Close()
	tests := []struct {
		name  string
		match map[string]string
		names []string
		want  map[string]float64
	}{
		{
			name:  "one controller's queue",
			match: map[string]string{"name": "hub-rayservice"},
			names: []string{"workqueue_depth", "workqueue_queue_duration_seconds_sum", "workqueue_queue_duration_seconds_count"},
			want: map[string]float64{
				"workqueue_depth": 9901, "workqueue_queue_duration_seconds_sum": 850, "workqueue_queue_duration_seconds_count": 100,
			},
		},
		{name: "every queue", names: []string{"workqueue_depth"}, want: map[string]float64{"workqueue_depth": 9904}},
		{name: "a metric not there", names: []string{"nothing"}, want: map[string]float64{"nothing": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Scrape(context.Background(), srv.URL, tt.match, tt.names...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Scrape (-want +got):\n%s", diff)
			}
		})
	}
}
