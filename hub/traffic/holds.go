package traffic

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/jsonsubset"
)

// holds reports whether live has every field want sets, at want's value: its labels,
// annotations and everything outside metadata and status. Fields only live has (defaults, an
// allocated clusterIP, what another manager added) do not count, as they would not for a
// server-side apply; lists count whole, element by element. A field want sets empty ({}, [] or
// null) is held by live without it: the API server drops what sets nothing, and taking that
// for a difference would rewrite the object on every reconcile.
func holds(live, want client.Object) bool {
	l, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return false
	}
	w, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
	if err != nil {
		return false
	}
	for _, k := range []string{"apiVersion", "kind", "status"} {
		delete(w, k)
	}
	if meta, ok := w["metadata"].(map[string]any); ok {
		w["metadata"] = map[string]any{"labels": meta["labels"], "annotations": meta["annotations"]}
	}
	return jsonsubset.CoversValue(l, w)
}

// holdsRoute is holds for the route, whose spec is the hub's alone: a field the hub no longer
// sets (a hostname dropped from the policy) must go, so live's spec may hold nothing more than
// want's either.
func holdsRoute(live, want *gwv1.HTTPRoute) bool {
	return holds(live, want) && holds(&gwv1.HTTPRoute{Spec: want.Spec}, &gwv1.HTTPRoute{Spec: live.Spec})
}
