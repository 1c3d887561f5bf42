package builder

import (
	"regexp"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestShortNames(t *testing.T) {
	tests := []struct {
		in, wantName, wantLabel string
	}{
		{in: "rc", wantName: "rc", wantLabel: "rc"},
		{in: "1rc", wantName: "rrc", wantLabel: "1rc"},
		{in: "-rc", wantName: "rrc", wantLabel: "rrc"},
		{in: strings.Repeat("a", 10) + strings.Repeat("b", 50), wantName: strings.Repeat("b", 50), wantLabel: strings.Repeat("a", 10) + strings.Repeat("b", 50)},
		{in: strings.Repeat("a", 5) + "." + strings.Repeat("b", 62), wantName: strings.Repeat("b", 50), wantLabel: "r" + strings.Repeat("b", 62)},
		{in: "", wantName: "", wantLabel: ""},
	}
	for _, tt := range tests {
		if got := shortName(tt.in); got != tt.wantName {
			t.Errorf("shortName(%q) = %q, want %q", tt.in, got, tt.wantName)
		}
		if got := shortLabel(tt.in); got != tt.wantLabel {
			t.Errorf("shortLabel(%q) = %q, want %q", tt.in, got, tt.wantLabel)
		}
	}
}

func TestObjectNames(t *testing.T) {
	rc := newCluster("rc").Obj()
	custom := newCluster("rc").Head(func(h *rayv1.HeadGroupSpec) {
		h.HeadService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "my-head"}}
	}).Obj()
	for got, want := range map[string]string{
		must(HeadServiceName(rc)):          "rc-head-svc",
		must(HeadServiceName(custom)):      "my-head",
		ServeServiceName(rc):               "rc-serve-svc",
		HeadlessServiceName(rc):            "rc-headless",
		IngressName(rc):                    "rc-head-ingress",
		RedisCleanupJobName(rc):            "rc-redis-cleanup",
		AuthSecretName(rc):                 "rc",
		AutoscalerRoleName(rc):             "rc",
		headFQDN(custom, DefaultOptions()): "my-head.ns.svc.cluster.local",
	} {
		if got != want {
			t.Errorf("name = %q, want %q", got, want)
		}
	}
	name := ReplicaGroupName("tpu")
	if !regexp.MustCompile(`^tpu-[a-z0-9]{5}$`).MatchString(name) || name == ReplicaGroupName("tpu") {
		t.Errorf("ReplicaGroupName = %q, want a fresh tpu-<5 random characters>", name)
	}
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}
