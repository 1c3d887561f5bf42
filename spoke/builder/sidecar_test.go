package builder

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
)

// The operator's sidecars follow the Ray container of their node type only, after what the
// builder adds, and are copies: editing a built Pod leaves the options alone.
func TestSidecars(t *testing.T) {
	opts := DefaultOptions()
	opts.HeadSidecars = []corev1.Container{{Name: "fluentbit", Image: "fluent/fluent-bit:1.9.6"}}
	opts.WorkerSidecars = []corev1.Container{{Name: "shipper", Image: "busybox"}}
	rc := newCluster("rc").Autoscaling(rayv1.AutoscalerVersionV1).Obj()

	head := mustHead(t, rc, opts)
	worker := mustWorker(t, rc, Replica{}, opts)
	if diff := cmp.Diff([]string{"ray-head", AutoscalerContainerName, "fluentbit"}, containerNames(head.Spec.Containers)); diff != "" {
		t.Errorf("head containers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ray-worker", "shipper"}, containerNames(worker.Spec.Containers)); diff != "" {
		t.Errorf("worker containers (-want +got):\n%s", diff)
	}
	head.Spec.Containers[2].Image = "changed"
	if opts.HeadSidecars[0].Image != "fluent/fluent-bit:1.9.6" {
		t.Error("editing the built Pod changed the options' sidecar")
	}
}

func TestSidecarNameClash(t *testing.T) {
	tests := []struct {
		name   string
		opts   func(o *Options)
		worker bool
	}{
		{name: "head sidecar named like the Ray container", opts: func(o *Options) { o.HeadSidecars = []corev1.Container{{Name: "ray-head", Image: "x"}} }},
		{name: "head sidecar named like the autoscaler", opts: func(o *Options) { o.HeadSidecars = []corev1.Container{{Name: AutoscalerContainerName, Image: "x"}} }},
		{name: "worker sidecar named like the Ray container", worker: true, opts: func(o *Options) { o.WorkerSidecars = []corev1.Container{{Name: "ray-worker", Image: "x"}} }},
		{name: "worker sidecar named like the GCS wait", worker: true, opts: func(o *Options) { o.WorkerSidecars = []corev1.Container{{Name: WaitGCSContainerName, Image: "x"}} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions()
			tt.opts(&opts)
			rc := newCluster("rc").Autoscaling(rayv1.AutoscalerVersionV1).Obj()
			var err error
			if tt.worker {
				_, err = WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], Replica{}, opts)
			} else {
				_, err = HeadPod(rc, opts)
			}
			if err == nil || !strings.Contains(err.Error(), "spoke's configuration") {
				t.Errorf("error = %v, want one saying the sidecar from the spoke's configuration clashes", err)
			}
		})
	}
}

func containerNames(cs []corev1.Container) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}
