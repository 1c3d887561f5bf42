package builder

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NotControlled says why existing, an object of kind the spoke would write for owner (of
// ownerKind), is not the spoke's to change: another controller, or none, owns it. It returns ""
// when owner is its controller (the same UID, so a namesake recreated since is not). The spoke
// only ever changes objects it controls: a name a user picks (spec.serveService) must not let
// the spoke repoint another application's Service.
func NotControlled(existing metav1.Object, kind string, owner metav1.Object, ownerKind string) string {
	if metav1.IsControlledBy(existing, owner) {
		return ""
	}
	by := "has no controller"
	if ref := metav1.GetControllerOfNoCopy(existing); ref != nil {
		by = fmt.Sprintf("is controlled by %s %s", ref.Kind, ref.Name)
		if ref.Kind == ownerKind && ref.Name == owner.GetName() {
			by = fmt.Sprintf("is controlled by an earlier %s %s (uid %s)", ref.Kind, ref.Name, ref.UID)
		}
	}
	return fmt.Sprintf("%s %s/%s %s, not by %s %s", kind, existing.GetNamespace(), existing.GetName(), by, ownerKind, owner.GetName())
}
