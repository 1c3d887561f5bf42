// Package jsonsubset decides whether an object as the API server holds it already says
// everything a desired object says. Fields only the stored object sets are ignored: the API
// server's defaults (a Gateway listener's allowedRoutes, a port's protocol) and fields other
// writers own must not make an unchanged object look changed, or every reconcile would write it
// again. The spoke uses it for the Gateway API objects it keeps, the hub for member copies and
// for its traffic objects.
// It imports no other RayFleet package; like all of shared/, never hub/, spoke/ or cmd/.
package jsonsubset

import (
	"bytes"
	"encoding/json"
)

// Covers reports whether have says everything want says, comparing their JSON forms: every
// field want sets is in have with the same value (null, {} and [] in want set nothing), lists
// element by element and of the same length. A value that cannot be encoded covers nothing.
func Covers(have, want any) bool {
	h, errHave := Value(have)
	w, errWant := Value(want)
	if errHave != nil || errWant != nil {
		return false
	}
	return CoversValue(h, w)
}

// Value is v as generic JSON (maps, lists, json.Number, strings, bools, nil), numbers kept as
// written so that 1 and 1.0 are not confused by a float conversion.
func Value(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// CoversValue is Covers on values already in generic JSON form.
func CoversValue(have, want any) bool {
	switch w := want.(type) {
	case nil:
		return true
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, wv := range w {
			hv, present := h[k]
			if !present && !isEmpty(wv) {
				return false
			}
			if present && !CoversValue(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		if len(w) != len(h) {
			return false
		}
		for i := range w {
			if !CoversValue(h[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return want == have
	}
}

// isEmpty reports whether a generic JSON value sets nothing: null, {} or [].
func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	default:
		return false
	}
}
