package managedns

import (
	_ "k8s.io/client-go/dynamic"
	_ "k8s.io/client-go/discovery"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/client-go/rest"
	_ "k8s.io/apimachinery/pkg/api/errors"
)
