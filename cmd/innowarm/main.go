// Command innowarm warms, inspects and measures the InnoDB buffer pool of MariaDB and MySQL.
package main

import (
	"os"

	"github.com/innowarm/innowarm/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
