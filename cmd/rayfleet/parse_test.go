package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"
)

// parseOnly parses argv (the command's path, its flags and arguments, connection flags
// anywhere) with cmd attached under a root command holding hub's connection flags as
// rayfleet's does, and completes its options without running it. group, when not empty, is the
// group command cmd belongs to.
func parseOnly(cmd *cobra.Command, group string, hub *hubFlags, argv []string, stderr io.Writer, complete func(cmd *cobra.Command, args []string) error) error {
	root := &cobra.Command{Use: "rayfleet"}
	root.SetErr(stderr)
	root.SetFlagErrorFunc(flagError)
	hub.registerConnection(root.PersistentFlags())
	parent := root
	if group != "" {
		parent = &cobra.Command{Use: group}
		root.AddCommand(parent)
	}
	parent.AddCommand(cmd)
	found, args, err := root.Find(argv)
	if err != nil {
		return err
	}
	if found != cmd {
		return fmt.Errorf("%v runs %s, not %s", argv, found.CommandPath(), cmd.CommandPath())
	}
	if err := cmd.ParseFlags(args); err != nil {
		return cmd.FlagErrorFunc()(cmd, err)
	}
	if err := checkConnectionFlags(cmd, nil); err != nil {
		return err
	}
	return complete(cmd, cmd.Flags().Args())
}

// testStreams write errors to stderr and drop the rest.
func testStreams(stderr io.Writer) streams {
	return streams{IOStreams: genericiooptions.IOStreams{Out: io.Discard, ErrOut: stderr}, clock: clock.RealClock{}}
}

func parseJoin(args []string, stderr io.Writer) (*joinArgs, error) {
	return parseJoinLine(append([]string{"join"}, args...), stderr)
}

// parseJoinLine parses a command line naming join anywhere.
func parseJoinLine(argv []string, stderr io.Writer) (*joinArgs, error) {
	o := &joinOptions{streams: testStreams(stderr), hub: newHubFlags()}
	if err := parseOnly(o.command(), "", o.hub, argv, stderr, o.complete); err != nil {
		return nil, err
	}
	return &o.args, nil
}

func parseUnjoin(args []string, stderr io.Writer) (*unjoinArgs, error) {
	o := &unjoinOptions{streams: testStreams(stderr), hub: newHubFlags()}
	if err := parseOnly(o.command(), "", o.hub, append([]string{"unjoin"}, args...), stderr, o.complete); err != nil {
		return nil, err
	}
	return &o.args, nil
}

func parseStatus(args []string, stderr io.Writer) (*statusArgs, error) {
	return parseStatusLine(append([]string{"status"}, args...), stderr)
}

// parseStatusLine parses a command line naming status anywhere.
func parseStatusLine(argv []string, stderr io.Writer) (*statusArgs, error) {
	o := &statusOptions{streams: testStreams(stderr), hub: newHubFlags()}
	if err := parseOnly(o.command(), "", o.hub, argv, stderr, o.complete); err != nil {
		return nil, err
	}
	return &o.args, nil
}

func parseRollout(verb string, args []string, stderr io.Writer) (*rolloutArgs, error) {
	return parseRolloutLine(verb, append([]string{"rollout", verb}, args...), stderr)
}

// parseRolloutLine parses a command line naming `rollout verb` anywhere.
func parseRolloutLine(verb string, argv []string, stderr io.Writer) (*rolloutArgs, error) {
	o := &rolloutOptions{streams: testStreams(stderr), hub: newHubFlags()}
	for _, v := range rolloutVerbs {
		if v.name == verb {
			if err := parseOnly(o.command(v), "rollout", o.hub, argv, stderr, o.complete); err != nil {
				return nil, err
			}
			return &o.args, nil
		}
	}
	panic("no rollout verb " + verb)
}
