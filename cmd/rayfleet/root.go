package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"

	"github.com/rayfleet/rayfleet/shared/hubpolicy"
)

// pluginPrefix is how kubectl finds plugins on PATH: `kubectl rayfleet` runs kubectl-rayfleet.
const pluginPrefix = "kubectl-"

// streams is where a command writes, and the clock heartbeat ages are measured with.
type streams struct {
	genericiooptions.IOStreams
	clock clock.PassiveClock
}

// displayName is the command line as the user typed it: "kubectl rayfleet" when the binary runs
// as a kubectl plugin, "rayfleet" otherwise.
func displayName(argv0 string) string {
	base := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if name, ok := strings.CutPrefix(base, pluginPrefix); ok && name != "" {
		return "kubectl " + strings.ReplaceAll(name, "_", "-")
	}
	return "rayfleet"
}

// newRootCommand builds the command tree. name is displayName's answer.
func newRootCommand(name string, s streams) *cobra.Command {
	// The usage lists commands in the order they are added: the order they are used in.
	cobra.EnableCommandSorting = false
	root := &cobra.Command{
		Use:   "rayfleet <command>",
		Short: "RayFleet manages a fleet of Kubernetes clusters running Ray Serve.",
		Long: `rayfleet manages a fleet of Kubernetes clusters running Ray Serve.

Shell completion: 'source <(rayfleet completion bash)'; zsh, fish and powershell likewise.`,
		Version: version,
		Args:    cobra.ArbitraryArgs,
		RunE:    groupRun,
		// Errors and usage are printed by runWith and usageError, once.
		SilenceErrors: true,
		SilenceUsage:  true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: name},
		// Connection flags may come before the command; the command decides whether it takes
		// them.
		PersistentPreRunE: checkConnectionFlags,
	}
	hub := newHubFlags()
	hub.registerConnection(root.PersistentFlags())
	hub.completeNamespaces(root)
	takesHub(root, true)
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetHelpFunc(help)
	root.SetUsageFunc(func(cmd *cobra.Command) error { return writeUsage(cmd.ErrOrStderr(), cmd) })
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		newJoinCommand(s, hub),
		newUnjoinCommand(s, hub),
		newStatusCommand(s, hub),
		newRolloutCommand(s, hub),
		newDevCommand(s),
		&cobra.Command{
			Use:   "version",
			Short: "Print the version.",
			Args:  cobra.ArbitraryArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := noArgs(cmd, args); err != nil {
					return err
				}
				_, err := fmt.Fprintln(cmd.OutOrStdout(), version)
				return err
			},
		},
	)
	// cobra adds `completion` when the root runs; added now, it answers an unknown shell as the
	// other groups answer an unknown command. The description says it instead of the command
	// list, whose column it would widen.
	root.CompletionOptions.HiddenDefaultCmd = true
	root.InitDefaultCompletionCmd()
	if completion, _, err := root.Find([]string{"completion"}); err == nil && completion != root {
		completion.Args, completion.RunE = cobra.ArbitraryArgs, groupRun
	}
	return root
}

// groupRun runs a command that only groups others (rayfleet, rollout, dev): without a command
// it prints the usage, with an unknown one it says so; both are usage errors.
func groupRun(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: unknown command %q\n\n", cmd.CommandPath(), args[0])
	}
	_ = writeUsage(cmd.ErrOrStderr(), cmd)
	if len(args) > 0 {
		return usageErr{fmt.Errorf("unknown command %q", args[0])}
	}
	return usageErr{errors.New("no command")}
}

// help prints the help asked for (-h, --help, `help`) to stdout, as kubectl does, so that it
// pipes into a pager; usage printed because of an error goes to stderr (SetUsageFunc).
func help(cmd *cobra.Command, _ []string) {
	_ = writeUsage(cmd.OutOrStdout(), cmd)
}

// connectionFlag marks the flags of kubectl's ConfigFlags, listed apart in the usage.
const connectionFlag = "rayfleet.io/connection"

// hubAnnotation marks the commands that reach the hub, and so take the connection flags; its
// value says whether they take -n too.
const hubAnnotation = "rayfleet.io/hub"

// Values of hubAnnotation.
const (
	hubWithNamespace    = "namespace"
	hubWithoutNamespace = "no-namespace"
)

// takesHub marks cmd as taking the connection flags (they select the hub); withNamespace says
// it takes -n as well. Group commands that list such commands are marked too, since the flags
// may be given before the command.
func takesHub(cmd *cobra.Command, withNamespace bool) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[hubAnnotation] = hubWithoutNamespace
	if withNamespace {
		cmd.Annotations[hubAnnotation] = hubWithNamespace
	}
}

// takesConnectionFlag says whether cmd takes the connection flag name.
func takesConnectionFlag(cmd *cobra.Command, name string) bool {
	switch cmd.Annotations[hubAnnotation] {
	case hubWithNamespace:
		return true
	case hubWithoutNamespace:
		return name != "namespace"
	default:
		return false
	}
}

// checkConnectionFlags refuses the connection flags given to a command that does not use
// them: they are persistent, so cobra parses them for every command.
func checkConnectionFlags(cmd *cobra.Command, _ []string) error {
	// `help` prints the help of another command, as --help does whatever else is given.
	if cmd.Name() == "help" && cmd.Parent() == cmd.Root() {
		return nil
	}
	var refused []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if _, ok := f.Annotations[connectionFlag]; ok && !takesConnectionFlag(cmd, f.Name) {
			refused = append(refused, "--"+f.Name)
		}
	})
	switch {
	case len(refused) == 0:
		return nil
	case cmd.Annotations[hubAnnotation] != "":
		return usageError(cmd, "-n/--namespace is not taken here: --hub-namespace and --member-namespace name the namespaces")
	default:
		return usageError(cmd, "it reaches no hub, so it takes no connection flags: "+strings.Join(refused, ", "))
	}
}

// writeUsage prints the usage line, the description, the commands and the flags: the command's
// own, then the connection flags it shares with kubectl, if it takes them.
func writeUsage(w io.Writer, cmd *cobra.Command) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n", cmd.UseLine())
	if cmd.Long != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(cmd.Long, "\n"))
	}
	if cmd.HasAvailableSubCommands() {
		b.WriteString("\nCommands:\n")
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				fmt.Fprintf(&b, "  %-9s %s\n", sub.Name(), sub.Short)
			}
		}
	}
	own, connection := pflag.NewFlagSet("own", pflag.ContinueOnError), pflag.NewFlagSet("connection", pflag.ContinueOnError)
	sortFlags := func(f *pflag.Flag) {
		_, isConnection := f.Annotations[connectionFlag]
		switch {
		case !isConnection:
			own.AddFlag(f)
		case takesConnectionFlag(cmd, f.Name):
			connection.AddFlag(f)
		}
	}
	cmd.LocalFlags().VisitAll(sortFlags)
	cmd.InheritedFlags().VisitAll(sortFlags)
	if own.HasAvailableFlags() {
		fmt.Fprintf(&b, "\nFlags:\n%s", own.FlagUsages())
	}
	if connection.HasAvailableFlags() {
		fmt.Fprintf(&b, "\nConnection flags (kubectl's; they select the hub, before or after the command):\n%s", connection.FlagUsages())
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\nRun '%s <command> --help' for a command's flags.\n", cmd.CommandPath())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// flagError reports a flag the command does not take, or a bad value, as a usage error. An
// unknown flag is named as the standard library's flag package names it, as rayfleet always
// has.
func flagError(cmd *cobra.Command, err error) error {
	var notExist *pflag.NotExistError
	if errors.As(err, &notExist) {
		name := notExist.GetSpecifiedName()
		if name == "" {
			name = notExist.GetSpecifiedShortnames()
		}
		err = fmt.Errorf("flag provided but not defined: -%s", name)
	}
	return usageError(cmd, err.Error())
}

// usageError prints msg and where to find the usage to the command's stderr, and returns it as
// a usage error (exit code 2).
func usageError(cmd *cobra.Command, msg string) error {
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\nRun '%s --help' for usage.\n", cmd.CommandPath(), msg, cmd.CommandPath())
	return usageErr{errors.New(msg)}
}

// usageErr marks errors of the command line itself.
type usageErr struct{ error }

func (e usageErr) Unwrap() error { return e.error }

// exitCode is a command's result that is no error to print: the exit code alone says it.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit code %d", int(e)) }

// codeOf maps a command's outcome to the process exit code: 0 on success or help, 2 on a usage
// error (printed already), the code of an exitCode, 1 otherwise (printed here, after the
// command's path).
func codeOf(cmd *cobra.Command, err error, stderr io.Writer) int {
	var uerr usageErr
	var code exitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &uerr):
		return 2
	case errors.As(err, &code):
		return int(code)
	default:
		fmt.Fprintf(stderr, "%s: %s\n", cmd.CommandPath(), errorText(err))
		return 1
	}
}

// errorText is err as printed. A write the member's guard refused is the API server's Forbidden,
// whose text names the policy and binding before the guard's message; it is printed as the
// guard's rule and message instead, after what the command was doing.
func errorText(err error) string {
	rule, denial, ok := hubpolicy.ParseDenial(err)
	var status *apierrors.StatusError
	if !ok || !errors.As(err, &status) {
		return err.Error()
	}
	guard := fmt.Sprintf("refused by the member's guard, rule %s: %s", rule, strings.TrimPrefix(denial, "hubPolicy/"+rule+": "))
	text := err.Error()
	if i := strings.LastIndex(text, status.Error()); i >= 0 {
		return text[:i] + guard
	}
	return guard
}
