package main

import (
	"slices"
	"testing"
)

func TestSoftMemoryLimit(t *testing.T) {
	tests := []struct {
		limit   string
		want    []string
		wantErr bool
	}{
		{limit: "512Mi", want: []string{"GOMEMLIMIT=456340275"}},
		{limit: "1G", want: []string{"GOMEMLIMIT=850000000"}},
		{limit: "0"},
		{limit: ""},
		{limit: "lots", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.limit, func(t *testing.T) {
			got, err := softMemoryLimit(tt.limit)
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Errorf("softMemoryLimit(%q) = %v, %v; want %v (error %v)", tt.limit, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestHubEnv(t *testing.T) {
	t.Setenv("GODEBUG", "")
	tests := []struct {
		limit string
		want  []string
	}{
		// The runtime's defaults pinned: no limit from this process's environment or cgroup.
		{limit: "0", want: []string{"GODEBUG=gctrace=1", "GOMEMLIMIT=off", "GOGC=100"}},
		{limit: "", want: []string{"GODEBUG=gctrace=1", "GOMEMLIMIT=off", "GOGC=100"}},
		{limit: "512Mi", want: []string{"GODEBUG=gctrace=1", "GOMEMLIMIT=456340275"}},
	}
	for _, tt := range tests {
		got, err := hubEnv(tt.limit)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("hubEnv(%q) = %q, %v; want %q", tt.limit, got, err, tt.want)
		}
	}
	t.Setenv("GODEBUG", "http2debug=1")
	if got := gcTraceEnv(); got != "GODEBUG=http2debug=1,gctrace=1" {
		t.Errorf("gcTraceEnv() = %q, want this process's GODEBUG kept", got)
	}
}
