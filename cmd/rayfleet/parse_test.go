package main

import (
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"
)

// parseOnly parses args with cmd, attached to a root command as rayfleet's are, and completes
// its options without running it.
func parseOnly(cmd *cobra.Command, args []string, stderr io.Writer, complete func(cmd *cobra.Command, args []string) error) error {
	root := &cobra.Command{Use: "rayfleet"}
	root.SetErr(stderr)
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		return cmd.FlagErrorFunc()(cmd, err)
	}
	return complete(cmd, cmd.Flags().Args())
}

// testStreams write errors to stderr and drop the rest.
func testStreams(stderr io.Writer) streams {
	return streams{IOStreams: genericiooptions.IOStreams{Out: io.Discard, ErrOut: stderr}, clock: clock.RealClock{}}
}

func parseJoin(args []string, stderr io.Writer) (*joinArgs, error) {
	o := &joinOptions{streams: testStreams(stderr)}
	if err := parseOnly(o.command(), args, stderr, o.complete); err != nil {
		return nil, err
	}
	return &o.args, nil
}

func parseUnjoin(args []string, stderr io.Writer) (*unjoinArgs, error) {
	o := &unjoinOptions{streams: testStreams(stderr)}
	if err := parseOnly(o.command(), args, stderr, o.complete); err != nil {
		return nil, err
	}
	return &o.args, nil
}

func parseStatus(args []string, stderr io.Writer) (*statusArgs, error) {
	o := &statusOptions{streams: testStreams(stderr)}
	if err := parseOnly(o.command(), args, stderr, o.complete); err != nil {
		return nil, err
	}
	return &o.args, nil
}

func parseRollout(verb string, args []string, stderr io.Writer) (*rolloutArgs, error) {
	o := &rolloutOptions{streams: testStreams(stderr)}
	for _, v := range rolloutVerbs {
		if v.name == verb {
			if err := parseOnly(o.command(v), args, stderr, o.complete); err != nil {
				return nil, err
			}
			return &o.args, nil
		}
	}
	panic("no rollout verb " + verb)
}
