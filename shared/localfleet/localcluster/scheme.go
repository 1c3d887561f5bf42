package localcluster

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rayfleet/rayfleet/shared/scheme"
)

// Scheme knows the built-in Kubernetes types and ray.io/v1; Cluster.Client uses it.
var Scheme = func() *runtime.Scheme {
	s, err := scheme.New()
	if err != nil {
		panic(err)
	}
	return s
}()
