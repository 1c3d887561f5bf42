package fleetstatus

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestAccelerators(t *testing.T) {
	tests := []struct {
		name string
		free corev1.ResourceList
		want string
	}{
		{name: "nothing", want: "-"},
		{name: "native only", free: corev1.ResourceList{"cpu": resource.MustParse("4"), "memory": resource.MustParse("1Gi"),
			"hugepages-2Mi": resource.MustParse("0"), "kubernetes.io/batch-cpu": resource.MustParse("1")}, want: "-"},
		{name: "kinds sorted, zero kept", free: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("0"),
			"amd.com/gpu": resource.MustParse("8"), "cpu": resource.MustParse("4")}, want: "amd.com/gpu=8,nvidia.com/gpu=0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := accelerators(tt.free); got != tt.want {
				t.Errorf("accelerators = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestShortHash(t *testing.T) {
	tests := []struct{ in, want string }{{"", ""}, {"abc", "abc"}, {"0123456789abcdef", "01234567"}}
	for _, tt := range tests {
		if got := shortHash(tt.in); got != tt.want {
			t.Errorf("shortHash(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
