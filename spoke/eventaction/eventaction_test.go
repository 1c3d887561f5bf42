package eventaction

import "testing"

func TestOf(t *testing.T) {
	for reason, want := range map[string]string{
		"CreatedWorkerPod":                    "Create",
		"FailedToCreateService":               "Create",
		"DeletedRayCluster":                   "Delete",
		"FailedToDeletePodCollection":         "Delete",
		"UpdatedServeApplications":            "Update",
		"FailedToUpdateHTTPRoute":             "Update",
		"InvalidRayServiceSpec":               "Validate",
		"RayServiceInitializingTimeout":       "Reconcile",
		"FailedToGetServeApplicationStatuses": "Reconcile",
	} {
		if got := Of(reason); got != want {
			t.Errorf("Of(%q) = %q, want %q", reason, got, want)
		}
	}
}
