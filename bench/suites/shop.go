package suites

import (
	"context"
	"fmt"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/sites/bundled"
)

// ShopOptions say how to run the bundled shop for a suite.
type ShopOptions struct {
	// Command runs the shop program (like [bin/webserv, shop] or [bin/shop]).
	Command []string
	// Work is a scratch directory (catalog and instance copies).
	Work string
}

// shopSite starts the local backend with the bundled storefront.
func shopSite(ctx context.Context, o ShopOptions) (*hosting.Local, *hosting.Site, error) {
	shop, err := bundled.Sites(ctx, bundled.Options{DataDir: filepath.Join(o.Work, "shop-data"), Command: o.Command})
	if err != nil {
		return nil, nil, err
	}
	local, err := hosting.NewLocal(zap.NewNop(), filepath.Join(o.Work, "instances"))
	if err != nil {
		return nil, nil, err
	}
	for _, s := range shop.Sites {
		if s.Name == "shopping" {
			return local, s, nil
		}
	}
	return nil, nil, fmt.Errorf("no shopping site")
}
