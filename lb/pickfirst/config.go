package pickfirst

import (
	"encoding/json"

	"github.com/lbkit/lbkit/lb"
)

// Config is pick_first's configuration, the JSON object
// {"shuffleAddressList": bool}. The zero value keeps the resolver's order.
type Config struct {
	// ShuffleAddressList, when true, shuffles the address list of every
	// update from the parent before connecting (gRFC A62). The JSON field
	// is "shuffleAddressList" (or its proto twin "shuffle_address_list").
	ShuffleAddressList bool `json:"shuffleAddressList,omitempty"`
}

// ParseConfig parses a pick_first config object into a [Config] and lists
// the fields it does not know ([lb.ConfigParser]). Empty input and null
// mean the zero Config. An error is a [*lb.ConfigError] naming the
// offending field.
func (Builder) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
	return lb.ParseConfigWith(raw, func(obj lb.ConfigObject) (Config, error) {
		var c Config
		err := obj.Decode(&c.ShuffleAddressList, "shuffleAddressList", "shuffle_address_list")
		return c, err
	})
}
