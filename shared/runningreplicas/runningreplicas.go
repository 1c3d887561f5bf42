// Package runningreplicas holds the value of the fleet.rayfleet.io/running-replicas annotation:
// how many replicas of a member's copy of a RayService really run, per worker group and per
// Serve deployment. The spoke formats it; the hub parses it, so Parse takes it as untrusted.
// It imports no other RayFleet package.
package runningreplicas

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Bounds of a value Parse accepts. Real clusters have a handful of worker groups and at most a
// few dozen Serve deployments; the bounds keep a hostile member's annotation from costing the
// hub more than a small, fixed amount to parse and hold, and a well-formed value within them
// fits Kubernetes' 256 KiB limit on an object's annotations.
const (
	// MaxEntries is the most entries of the three maps together.
	MaxEntries = 1000
	// MaxKeyBytes is the longest worker group name or "<application>/<deployment>".
	MaxKeyBytes = 200
	// MaxBytes is the longest value.
	MaxBytes = 256 * 1024
)

// Replicas counts what runs on the active RayCluster of a member RayService. A worker group or
// deployment with nothing running is left out: the hub knows from the spec it placed which
// ones to expect, and a deployment's replicas starting cost no write.
type Replicas struct {
	// Workers maps each worker group of the cluster's spec to its worker Pods that are Running
	// and Ready and not being deleted. A multi-host group counts Pods, not replicas of
	// numOfHosts Pods each, as KubeRay's readyWorkerReplicas does.
	Workers map[string]int32 `json:"workers,omitempty"`
	// Serve maps "<application>/<deployment>" to the deployment's replicas in state RUNNING, as
	// Ray Serve reports them.
	Serve map[string]int32 `json:"serve,omitempty"`
	// Held maps each worker group to its worker Pods that exist and have not ended, whether
	// starting, running or being deleted: what the group holds of the member's resources, which
	// bounds how much another colour may be given meanwhile. Pods, as Workers counts them.
	Held map[string]int32 `json:"held,omitempty"`
}

// ServeKey is the Serve key of deployment in application.
func ServeKey(application, deployment string) string { return application + "/" + deployment }

// Format encodes r compactly, map keys sorted, so equal counts give equal values. It refuses
// what Parse would refuse.
func Format(r Replicas) (string, error) {
	if err := r.validate(); err != nil {
		return "", err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode running replicas: %w", err)
	}
	if len(b) > MaxBytes {
		return "", fmt.Errorf("running replicas: %d bytes, more than %d", len(b), MaxBytes)
	}
	return string(b), nil
}

// Parse decodes a value Format made. Anything else (not a JSON object, counts that are not
// non-negative 32-bit integers, bounds exceeded, empty keys) is an error. Unknown fields are
// ignored, so a newer spoke may add some.
func Parse(s string) (Replicas, error) {
	if len(s) > MaxBytes {
		return Replicas{}, fmt.Errorf("running replicas: %d bytes, more than %d", len(s), MaxBytes)
	}
	if !strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{") {
		return Replicas{}, errors.New("running replicas: not a JSON object")
	}
	var r Replicas
	// Unmarshal refuses data after the object, integers out of int32's range and fractions.
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return Replicas{}, fmt.Errorf("running replicas: %w", err)
	}
	if err := r.validate(); err != nil {
		return Replicas{}, err
	}
	return r, nil
}

func (r Replicas) validate() error {
	if n := len(r.Workers) + len(r.Serve) + len(r.Held); n > MaxEntries {
		return fmt.Errorf("running replicas: %d worker groups and deployments, more than %d", n, MaxEntries)
	}
	if err := validCounts("workers", r.Workers); err != nil {
		return err
	}
	if err := validCounts("serve", r.Serve); err != nil {
		return err
	}
	return validCounts("held", r.Held)
}

func validCounts(field string, counts map[string]int32) error {
	for k, v := range counts {
		switch {
		case k == "":
			return fmt.Errorf("running replicas: %s: empty name", field)
		case len(k) > MaxKeyBytes:
			return fmt.Errorf("running replicas: %s: name of %d bytes, more than %d", field, len(k), MaxKeyBytes)
		case v < 0:
			return fmt.Errorf("running replicas: %s[%q]: negative count %d", field, k, v)
		}
	}
	return nil
}
