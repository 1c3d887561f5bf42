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
