package lokitest

// A label_format template that is one call tree of the numeric functions,
// evaluated without text/template.

import (
	"fmt"
	"math"
	"text/template/parse"
)

// numericTemplate is a template whose whole text is one action calling
// the fake's numeric template functions on labels and number literals
// (Loki's idiom for a comparison: {{ ceil (minf 1 (maxf 0 (subf (float64
// .duration) 10))) }}), as a function of the labels; nil, false for any
// other template, which text/template runs.
//
// Such a template reads a label unique to each line (a duration), so the
// memo of outputs by labels misses on every line, and text/template's
// reflective calls were a tenth of the fake's time. The result is what
// text/template prints: the float64 through fmt's %v; literals are read
// as text/template passes them to an any parameter (int or float64),
// and toFloat64 is the same function both ways.
func numericTemplate(root *parse.ListNode) (func(ls map[string]string) string, bool) {
	if root == nil || len(root.Nodes) != 1 {
		return nil, false
	}
	action, ok := root.Nodes[0].(*parse.ActionNode)
	if !ok {
		return nil, false
	}
	eval, ok := numericPipe(action.Pipe)
	if !ok {
		return nil, false
	}
	return func(ls map[string]string) string { return fmt.Sprint(eval(ls)) }, true
}

// numericPipe compiles a pipeline of one call of a numeric function.
func numericPipe(p *parse.PipeNode) (func(map[string]string) float64, bool) {
	if p == nil || len(p.Decl) > 0 || len(p.Cmds) != 1 {
		return nil, false
	}
	args := p.Cmds[0].Args
	if len(args) < 2 {
		return nil, false
	}
	fn, ok := args[0].(*parse.IdentifierNode)
	if !ok {
		return nil, false
	}
	var operands []func(map[string]string) float64
	for _, a := range args[1:] {
		o, ok := numericOperand(a)
		if !ok {
			return nil, false
		}
		operands = append(operands, o)
	}
	first, rest := operands[0], operands[1:]
	switch fn.Ident {
	case "float64":
		if len(rest) > 0 {
			return nil, false
		}
		return first, true
	case "ceil", "floor":
		if len(rest) > 0 {
			return nil, false
		}
		round := math.Ceil
		if fn.Ident == "floor" {
			round = math.Floor
		}
		return func(ls map[string]string) float64 { return round(first(ls)) }, true
	case "subf", "maxf", "minf":
		op := map[string]func(a, b float64) float64{
			"subf": func(a, b float64) float64 { return a - b },
			"maxf": math.Max,
			"minf": math.Min,
		}[fn.Ident]
		return func(ls map[string]string) float64 {
			x := first(ls)
			for _, o := range rest {
				x = op(x, o(ls))
			}
			return x
		}, true
	}
	return nil, false
}

// numericOperand is one argument: a label (its text as toFloat64 reads
// it; a missing label is "", as with missingkey=zero), a number literal,
// or a parenthesized numeric call.
func numericOperand(n parse.Node) (func(map[string]string) float64, bool) {
	switch x := n.(type) {
	case *parse.FieldNode:
		if len(x.Ident) != 1 {
			return nil, false
		}
		name := x.Ident[0]
		return func(ls map[string]string) float64 { return toFloat64(ls[name]) }, true
	case *parse.NumberNode:
		var v any
		switch {
		case x.IsComplex || (x.IsUint && !x.IsInt):
			return nil, false // text/template refuses it for an any parameter
		case x.IsInt:
			v = int(x.Int64)
		case x.IsFloat:
			v = x.Float64
		default:
			return nil, false
		}
		f := toFloat64(v)
		return func(map[string]string) float64 { return f }, true
	case *parse.PipeNode:
		return numericPipe(x)
	}
	return nil, false
}
