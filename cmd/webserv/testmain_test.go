package main

import (
	"os"
	"testing"

	"github.com/webserv-rl/webserv/hosting/hostingtest"
)

func TestMain(m *testing.M) { os.Exit(hostingtest.Main(m)) }
