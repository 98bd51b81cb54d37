module github.com/sitebus/sitebus/services

go 1.26.0

require github.com/sitebus/sitebus/pkg v0.0.0-00010101000000-000000000000

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/cobra v1.10.1 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
)

replace github.com/sitebus/sitebus/pkg => ../pkg
