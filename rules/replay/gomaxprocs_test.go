package replay

import "runtime"

func runtimeGOMAXPROCS(n int) int { return runtime.GOMAXPROCS(n) }
