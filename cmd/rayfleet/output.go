package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// outputWide is -o wide: the tables with more columns, as `kubectl get -o wide`.
const outputWide = "wide"

// addPrintFlags adds kubectl's -o (json, yaml, name, jsonpath, go-template, ...) and the flags
// that go with it; without -o the command prints its tables. wide says the command's tables
// have a wide form.
func addPrintFlags(cmd *cobra.Command, wide bool) *genericclioptions.PrintFlags {
	p := genericclioptions.NewPrintFlags("")
	p.AddFlags(cmd)
	formats := p.AllowedFormats()
	if wide {
		formats = append(formats, outputWide)
	}
	if f := cmd.Flags().Lookup("output"); f != nil {
		f.Usage = "output format: " + strings.Join(formats, "|") + " (default the tables)"
	}
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return formats, cobra.ShellCompDirectiveNoFileComp
	})
	return p
}

// checkOutput returns -o's format, refusing one no printer takes before anything is read.
// wide is accepted when the command's tables have a wide form.
func checkOutput(cmd *cobra.Command, p *genericclioptions.PrintFlags, wide bool) (string, error) {
	if *p.OutputFormat == "" {
		return "", nil
	}
	if wide && *p.OutputFormat == outputWide {
		return outputWide, nil
	}
	if _, err := p.ToPrinter(); err != nil {
		return "", usageError(cmd, err.Error())
	}
	return *p.OutputFormat, nil
}

// printList prints objs with -o's printer as a v1 List, as `kubectl get` prints several; the
// name printer takes no list, so it prints them one by one.
func printList(w io.Writer, p *genericclioptions.PrintFlags, scheme *runtime.Scheme, objs ...client.Object) error {
	if *p.OutputFormat == "name" {
		for _, obj := range objs {
			if err := printObject(w, p, scheme, obj); err != nil {
				return err
			}
		}
		return nil
	}
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: make([]runtime.RawExtension, len(objs))}
	for i, obj := range objs {
		if err := setKind(obj, scheme); err != nil {
			return err
		}
		list.Items[i].Object = obj
	}
	return printObject(w, p, scheme, list)
}

// printObject prints obj with -o's printer.
func printObject(w io.Writer, p *genericclioptions.PrintFlags, scheme *runtime.Scheme, obj runtime.Object) error {
	printer, err := p.ToPrinter()
	if err != nil {
		return err
	}
	if o, ok := obj.(client.Object); ok {
		if err := setKind(o, scheme); err != nil {
			return err
		}
	}
	if err := printer.PrintObj(obj, w); err != nil {
		return fmt.Errorf("printing as %s: %w", *p.OutputFormat, err)
	}
	return nil
}

// setKind sets obj's apiVersion and kind, which objects read with a typed client lack and
// printers need.
func setKind(obj client.Object, scheme *runtime.Scheme) error {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}
