package analysis

// EdgesOf is edgesOf for the package's external tests: the second passes
// they drive move the edges analyze --config moves.
var EdgesOf = edgesOf
