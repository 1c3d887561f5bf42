package v1alpha1

// Condition types. A type means the same thing on every kind that carries it; the kinds each
// condition appears on are listed with it.
const (
	// ConditionJoined (MemberCluster) is True while the hub has engaged the member from its
	// kubeconfig Secret.
	ConditionJoined = "Joined"
	// ConditionReachable (MemberCluster) is True while the hub can list and watch the member's
	// API server; an error or a time-out turns it False with the error as the message.
	ConditionReachable = "Reachable"
	// ConditionAgentReady (MemberCluster, ClusterReport) is True while the spoke agent runs and,
	// on the MemberCluster, its ClusterReport heartbeat is fresh.
	ConditionAgentReady = "AgentReady"
	// ConditionReady (MemberCluster, RayServiceBinding): on a MemberCluster, Joined, Reachable
	// and AgentReady are all True; on a binding, every placed cluster's RayService is Ready.
	ConditionReady = "Ready"
	// ConditionAccepted (PlacementPolicy) is False when the hub cannot use the policy (for
	// example a label selector that does not parse), which the CRD schema cannot catch.
	ConditionAccepted = "Accepted"
	// ConditionPlaced (RayServiceBinding) is True when as many clusters as the policy asks for
	// were chosen; False with a scheduler-like message naming why the others did not fit.
	ConditionPlaced = "Placed"
	// ConditionPropagated (RayServiceBinding) is True when every chosen cluster runs the current
	// spec hash.
	ConditionPropagated = "Propagated"
	// ConditionMemberRefused (hub RayService) is True while some member's API server refuses
	// the hub's copy of the current spec; the message names each member and the rule.
	ConditionMemberRefused = "MemberRefused"
	// ConditionFailoverFrozen (RayServiceBinding, hub RayService) is True while more than half
	// of the members the RayService's policy selects (and at least two) are not Ready: the hub
	// then moves it off none of them, since a fleet-wide fault is better ridden out in place
	// than answered with a stampede onto the few members left. Absent otherwise.
	ConditionFailoverFrozen = "FailoverFrozen"
	// ConditionCopiesRetained (RayServiceBinding, hub RayService) is True while copies the
	// RayService failed over from are kept because the policy's purgeMode is Never; the
	// message names the clusters. Absent otherwise.
	ConditionCopiesRetained = "CopiesRetained"
	// ConditionPodSecurityEnforced (MemberCluster, hub RayService) is False while a namespace
	// holding the hub's copies on the member carries no pod-security.kubernetes.io/enforce
	// label and Pods running there would break the member's level, so the hub does not label
	// it; the message names the namespaces (and, on a hub RayService, the members), the Pods
	// and the checks they fail. True on a MemberCluster otherwise; absent on a hub RayService.
	ConditionPodSecurityEnforced = "PodSecurityEnforced"
	// ConditionTrafficShifting (hub RayService) is present when the policy manages traffic or
	// rolls out BlueGreen: True while traffic moves from blue to green, False otherwise; the
	// message gives the split ("blue us,eu 40% → green ap 60%").
	ConditionTrafficShifting = "TrafficShifting"
	// ConditionServeAddressesBounded (MemberCluster) is True when spec.serveAddresses bounds
	// the serve addresses the member may report; False, a warning to the hub's admin, when it
	// is absent (any address but the never-allowed ones is routed to) or does not parse
	// (nothing is). It does not count towards Ready.
	ConditionServeAddressesBounded = "ServeAddressesBounded"
	// ConditionCapacityBounded (MemberCluster) is False, a warning to the hub's admin, when the
	// member reports more allocatable or free capacity than spec.capacityLimits allows for a
	// resource (placement reads it as the limit); True otherwise, including when no limits are
	// set, as most fleets trust their members' reports. It does not count towards Ready.
	ConditionCapacityBounded = "CapacityBounded"
	// ConditionCredentialsValid (MemberCluster) is False, a warning to the hub's admin, when
	// the bootstrap token of the member's kubeconfig Secret expires within the hub's
	// --credential-expiry-warning or has expired, or when the member refuses the hub a token
	// (TokenRequest); re-running `rayfleet join` mends each. It does not count towards Ready.
	ConditionCredentialsValid = "CredentialsValid"
	// ConditionPodsForbidden (member RayCluster and RayService) is True while a Pod the spoke
	// would build for a hub-placed RayService violates the member's Pod Security level, whoever
	// wrote the template: the spoke creates none of them. The message names the level, the
	// groups, the checks and the fields. Absent otherwise.
	ConditionPodsForbidden = "PodsForbidden"
	// ConditionOwnershipConflict (member RayCluster and RayService) is True while an object the
	// spoke would write for it (a Service, an Ingress, a Gateway, an HTTPRoute) exists without
	// being controlled by it: the spoke leaves that object alone. The message names each object
	// and who controls it. Absent otherwise.
	ConditionOwnershipConflict = "OwnershipConflict"
	// ConditionGrantMissing (RayServiceBinding, hub RayService) is True while the RayService's
	// namespace lacks a NamespaceGrant for a member or for traffic it would use: reason
	// NotGranted when the hub refuses it, KeptWithoutGrant when a placement or route made
	// before grants existed is kept (a warning to the hub's admin). The message names each
	// grant missing. Absent otherwise.
	ConditionGrantMissing = "GrantMissing"
)

// Reasons of GrantMissing (and of Placed=False when the namespace has no grant at all).
const (
	// ReasonNotGranted: the hub places nothing new, or writes no route, where the namespace
	// has no NamespaceGrant; the message names the member or Gateway and hostname.
	ReasonNotGranted = "NotGranted"
	// ReasonKeptWithoutGrant: members or a route the RayService already had are kept though
	// no NamespaceGrant covers them; nothing is added beyond them.
	ReasonKeptWithoutGrant = "KeptWithoutGrant"
)

// Reasons of ServeAddressesBounded.
const (
	// ReasonServeAddressesGranted (True): spec.serveAddresses parses and bounds the addresses.
	ReasonServeAddressesGranted = "Granted"
	// ReasonNoServeAddressRanges (False): the MemberCluster grants no ranges.
	ReasonNoServeAddressRanges = "NoServeAddressRanges"
	// ReasonInvalidServeAddressRanges (False): an entry does not parse; no address is routed to.
	ReasonInvalidServeAddressRanges = "InvalidServeAddressRanges"
)

// Reasons of CapacityBounded.
const (
	// ReasonCapacityLimited (True): the member's reported capacity is within spec.capacityLimits.
	ReasonCapacityLimited = "CapacityLimited"
	// ReasonNoCapacityLimits (True): spec.capacityLimits is not set; placement takes the
	// member's reported capacity as it is.
	ReasonNoCapacityLimits = "NoCapacityLimits"
	// ReasonCapacityOverLimit (False): the member reports more than spec.capacityLimits allows;
	// the message names the resources.
	ReasonCapacityOverLimit = "CapacityOverLimit"
)

// Reasons of CredentialsValid.
const (
	// ReasonTokenValid (True): the bootstrap token lasts beyond the warning window and the
	// member grants the hub its tokens.
	ReasonTokenValid = "TokenValid"
	// ReasonNoTokenExpiry (True): the kubeconfig's credentials carry no expiry the hub can read
	// (a client certificate, a token that is no JWT or has no exp claim).
	ReasonNoTokenExpiry = "NoTokenExpiry"
	// ReasonBootstrapTokenExpiring (False): the bootstrap token expires within the warning window.
	ReasonBootstrapTokenExpiring = "BootstrapTokenExpiring"
	// ReasonBootstrapTokenExpired (False): the bootstrap token has expired; the hub reaches the
	// member only while the chain of tokens it minted lasts (not across a hub restart).
	ReasonBootstrapTokenExpired = "BootstrapTokenExpired"
	// ReasonTokenRequestFailed (False): the member refused the hub's last TokenRequest; the
	// message quotes its API server.
	ReasonTokenRequestFailed = "TokenRequestFailed"
	// ReasonCredentialsUnknown (Unknown): the kubeconfig Secret could not be read (see Joined).
	ReasonCredentialsUnknown = "CredentialsUnknown"
)

// Reasons of PodsForbidden and OwnershipConflict.
const (
	// ReasonPodSecurityViolation (PodsForbidden=True): see ConditionPodsForbidden.
	ReasonPodSecurityViolation = "PodSecurityViolation"
	// ReasonNotControlled (OwnershipConflict=True): see ConditionOwnershipConflict.
	ReasonNotControlled = "NotControlled"
)

// Reasons of TrafficShifting.
const (
	// ReasonShifting (True): traffic moves from blue to green step by step.
	ReasonShifting = "Shifting"
	// ReasonShiftPaused (True): the shift waits (a member not Ready, an application not
	// RUNNING, the gateway not accepting the route, the paused annotation, an approval).
	ReasonShiftPaused = "ShiftPaused"
	// ReasonCapacityWaiting (True): a capacity-following shift waits for the colour taking the
	// traffic to run the capacity its next share needs, or for the other to shrink and leave
	// it room within the surge; the message says which.
	ReasonCapacityWaiting = "CapacityWaiting"
	// ReasonGreenDeploying (False): green runs up the target revision; blue takes the traffic.
	ReasonGreenDeploying = "GreenDeploying"
	// ReasonShifted (False): green takes all of the traffic (and blue is retired after
	// retireAfterSeconds).
	ReasonShifted = "Shifted"
	// ReasonShiftReverted (False): the traffic went back to blue (undo, deadline, newer revision).
	ReasonShiftReverted = "ShiftReverted"
	// ReasonNoGreenClusters (False): no set of other members can take the target revision; the
	// message says why each member is not eligible.
	ReasonNoGreenClusters = "NoGreenClusters"
	// ReasonTrafficSteady (False): no rollout shifts traffic; the message gives the weights.
	ReasonTrafficSteady = "TrafficSteady"
	// ReasonNoTrafficManaged (False): the policy sets no traffic: a BlueGreen rollout brings
	// green up, then removes blue, and routes nothing.
	ReasonNoTrafficManaged = "NoTrafficManaged"
	// ReasonRouteNotApplied (False): the HTTPRoute or its backends could not be written or read;
	// the message quotes the traffic cluster's API server.
	ReasonRouteNotApplied = "RouteNotApplied"
	// ReasonTrafficForbidden (False): the traffic cluster refused the hub the route's namespace
	// (the RayService's): the hub's admin grants it there (the hub chart's traffic.namespaces,
	// rayfleet join --traffic-namespace, the spoke chart's hubTraffic.namespaces).
	ReasonTrafficForbidden = "Forbidden"
	// A route the Gateway does not admit gives False with the Gateway's own reason
	// (NotAllowedByListeners, NoMatchingListenerHostname, BackendNotFound, ...) and message.
)

// Reasons of FailoverFrozen and CopiesRetained.
const (
	// ReasonTooManyMembersNotReady (FailoverFrozen=True).
	ReasonTooManyMembersNotReady = "TooManyMembersNotReady"
	// ReasonPurgeModeNever (CopiesRetained=True).
	ReasonPurgeModeNever = "PurgeModeNever"
)

// Reasons of the MemberCluster and ClusterReport conditions.
const (
	// ReasonEngaged (Joined=True): the member's cluster is engaged by the hub's manager.
	ReasonEngaged = "Engaged"
	// ReasonKubeconfigSecretNotFound (Joined=False): the referenced Secret or key is missing.
	ReasonKubeconfigSecretNotFound = "KubeconfigSecretNotFound"
	// ReasonKubeconfigInvalid (Joined=False): the Secret's kubeconfig does not parse or connect.
	ReasonKubeconfigInvalid = "KubeconfigInvalid"
	// ReasonKubeconfigRefused (Joined=False): the Secret's kubeconfig holds a field the hub
	// refuses (an exec plugin, a file, a proxy, no CA, ...); the message names the Secret and
	// the field, and the hub keeps no client of the member.
	ReasonKubeconfigRefused = "KubeconfigRefused"
	// ReasonEngaging (Joined=False): the kubeconfig Secret is valid and the hub is still
	// connecting to the member (the provider retries a failing connection with backoff).
	ReasonEngaging = "Engaging"
	// ReasonAPIServerReachable (Reachable=True): the last list/watch calls succeeded.
	ReasonAPIServerReachable = "APIServerReachable"
	// ReasonAPIServerUnreachable (Reachable=False): list/watch calls failed or timed out.
	ReasonAPIServerUnreachable = "APIServerUnreachable"
	// ReasonHeartbeatFresh (AgentReady=True on a MemberCluster): the ClusterReport is recent.
	ReasonHeartbeatFresh = "HeartbeatFresh"
	// ReasonHeartbeatStale (AgentReady=False on a MemberCluster): no heartbeat within the timeout.
	ReasonHeartbeatStale = "HeartbeatStale"
	// ReasonClusterReportNotFound (AgentReady=False on a MemberCluster): the member has no
	// ClusterReport yet, typically because the spoke is not installed.
	ReasonClusterReportNotFound = "ClusterReportNotFound"
	// ReasonAgentRunning (AgentReady=True on a ClusterReport): the spoke's caches are synced
	// and its reconcilers run.
	ReasonAgentRunning = "AgentRunning"
	// ReasonAgentNotReady (AgentReady=False on a ClusterReport): the spoke runs but cannot
	// reconcile yet (caches not synced, CRDs missing); the message says which.
	ReasonAgentNotReady = "AgentNotReady"
	// ReasonAnotherOperatorActive (AgentReady=False on a ClusterReport and on its
	// MemberCluster): KubeRay's operator, or another spoke, reconciles the member's ray.io
	// objects, so the spoke leaves them alone; the message names the other controller.
	ReasonAnotherOperatorActive = "AnotherOperatorActive"
	// ReasonNamespacesEnforced (PodSecurityEnforced=True): every namespace holding the hub's
	// copies enforces the member's Pod Security level.
	ReasonNamespacesEnforced = "NamespacesEnforced"
	// ReasonPodsViolateLevel (PodSecurityEnforced=False): some namespaces are left unlabelled
	// because Pods in them break the member's level; the message lists them.
	ReasonPodsViolateLevel = "PodsViolateLevel"
	// ReasonMemberReady (Ready=True on a MemberCluster): Joined, Reachable and AgentReady hold.
	ReasonMemberReady = "MemberReady"
	// ReasonMemberNotReady (Ready=False on a MemberCluster): the message names the conditions
	// that do not hold.
	ReasonMemberNotReady = "MemberNotReady"
)

// Reasons of the PlacementPolicy conditions.
const (
	// ReasonPolicyValid (Accepted=True): the hub can plan with the policy.
	ReasonPolicyValid = "PolicyValid"
	// ReasonPolicyInvalid (Accepted=False): the message says what the hub could not use.
	ReasonPolicyInvalid = "PolicyInvalid"
)

// Reasons of the RayServiceBinding conditions.
const (
	// ReasonClustersChosen (Placed=True): all the clusters the policy asks for were chosen.
	ReasonClustersChosen = "ClustersChosen"
	// ReasonInsufficientClusters (Placed=False): fewer clusters fit than the policy asks for;
	// the RayService runs on those that fit, the message says why the others did not.
	ReasonInsufficientClusters = "InsufficientClusters"
	// ReasonNoClusterFits (Placed=False): no cluster fits; nothing is propagated.
	ReasonNoClusterFits = "NoClusterFits"
	// ReasonPolicyNotFound (Placed=False): the RayService names a PlacementPolicy that does
	// not exist.
	ReasonPolicyNotFound = "PolicyNotFound"
	// ReasonValidationFailed (Placed=False): the hub RayService is invalid and is never placed.
	ReasonValidationFailed = "ValidationFailed"
	// ReasonApplied (Propagated=True): every chosen cluster runs the current spec hash.
	ReasonApplied = "Applied"
	// ReasonApplyPending (Propagated=False): some clusters still run an older spec hash.
	ReasonApplyPending = "ApplyPending"
	// ReasonApplyFailed (Propagated=False): applying to some clusters failed; the message names
	// them with their errors.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonNotPlaced (Propagated=False): no cluster is chosen, so there is nothing to apply;
	// the Placed condition says why.
	ReasonNotPlaced = "NotPlaced"
	// ReasonForeignRayService (Propagated=False): a member already has a RayService of that
	// name that the hub did not create; the hub leaves it alone.
	ReasonForeignRayService = "ForeignRayService"
	// ReasonRefusedByMember (Propagated=False; MemberRefused=True on the hub RayService): a
	// member's API server refused the copy (its hub policy guard, a terminating namespace, a
	// copy too large); the message names the member and the rule, and placement leaves the
	// member out for this spec.
	ReasonRefusedByMember = "RefusedByMember"
	// ReasonNoMemberRefused (MemberRefused=False on the hub RayService): no member refuses the
	// current spec.
	ReasonNoMemberRefused = "NoMemberRefused"
	// ReasonAllClustersReady (Ready=True): every placed cluster's RayService is Ready.
	ReasonAllClustersReady = "AllClustersReady"
	// ReasonClustersNotReady (Ready=False): the message names the clusters that are not Ready.
	ReasonClustersNotReady = "ClustersNotReady"
)
