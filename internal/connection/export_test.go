package connection

// ProbeTLSRefusal is probeTLSRefusal, for the tests of package connection_test, which
// run servers (sandboxtest imports this package).
var ProbeTLSRefusal = probeTLSRefusal
