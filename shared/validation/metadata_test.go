package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRayClusterMetadata(t *testing.T) {
	const dns1035 = `must be a valid DNS-1035 label: a DNS-1035 label must consist of lower case alphanumeric characters or '-', ` +
		`start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', ` +
		`regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`
	long := strings.Repeat("a", 54)
	tests := []struct {
		name, cluster, want string
	}{
		{name: "ordinary name", cluster: "raycluster-kuberay"},
		{name: "exactly 53 characters", cluster: strings.Repeat("a", 53)},
		{
			name: "54 characters", cluster: long,
			want: `metadata.name: Invalid value: "` + long + `": must be no more than 53 characters (got 54), so that "<name>-serve-svc" is a valid Service name`,
		},
		{
			name: "too long is reported before bad syntax", cluster: strings.Repeat("1", 60),
			want: `metadata.name: Invalid value: "` + strings.Repeat("1", 60) + `": must be no more than 53 characters (got 60), so that "<name>-serve-svc" is a valid Service name`,
		},
		{name: "starts with a digit", cluster: strings.Repeat("1", 53), want: `metadata.name: Invalid value: "` + strings.Repeat("1", 53) + `": ` + dns1035},
		{name: "upper case", cluster: "MyCluster", want: `metadata.name: Invalid value: "MyCluster": ` + dns1035},
		{name: "dot is not allowed in a DNS-1035 label", cluster: "my.cluster", want: `metadata.name: Invalid value: "my.cluster": ` + dns1035},
		{name: "ends with a dash", cluster: "cluster-", want: `metadata.name: Invalid value: "cluster-": ` + dns1035},
		{name: "underscore", cluster: "my_cluster", want: `metadata.name: Invalid value: "my_cluster": ` + dns1035},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, RayClusterMetadata(metav1.ObjectMeta{Name: tt.cluster, Namespace: "ns"}), tt.want)
		})
	}
}

func TestMaxRayClusterNameLength(t *testing.T) {
	if MaxRayClusterNameLength != 53 {
		t.Errorf("MaxRayClusterNameLength = %d, want KubeRay's 53", MaxRayClusterNameLength)
	}
}
