package gateway_test

import "testing"

// standardTransport makes the gateways the tests build send to their
// coordinators with Go's http.Transport (Config.StandardTransport) instead
// of the gateway's pool. TestOnTheStandardTransport sets it.
var standardTransport bool

// The gateway's end-to-end tests, again with Go's http.Transport to the
// coordinators: both transports keep every promise these tests check.
// (Those that count the pool's own connections stay with the pool.)
func TestOnTheStandardTransport(t *testing.T) {
	standardTransport = true
	t.Cleanup(func() { standardTransport = false })
	for _, tc := range []struct {
		name string
		test func(*testing.T)
	}{
		{"PrestoClientThroughTwoReplicas", TestPrestoClientThroughTwoReplicas},
		{"TrinoClientThroughTwoReplicas", TestTrinoClientThroughTwoReplicas},
		{"CancelReachesTheCoordinator", TestCancelReachesTheCoordinator},
		{"TrinoClientCancelReachesTheCoordinator", TestTrinoClientCancelReachesTheCoordinator},
		{"CoordinatorKilledMidQuery", TestCoordinatorKilledMidQuery},
		{"DepartedCoordinator", TestDepartedCoordinator},
		{"GatewayOnADSN", TestGatewayOnADSN},
		{"GzipToClients", TestGzipToClients},
		{"ClientLeavingDuringThePOSTCancelsTheQuery", TestClientLeavingDuringThePOSTCancelsTheQuery},
		{"TransactionStaysOnItsCoordinator", TestTransactionStaysOnItsCoordinator},
		{"LargeAnswerToThePOSTArrivesWhole", TestLargeAnswerToThePOSTArrivesWhole},
		{"BrokenAnswerBeforeAnyByteIsAPrestoError", TestBrokenAnswerBeforeAnyByteIsAPrestoError},
		{"ClientLeavingMidPageBlamesNoCoordinator", TestClientLeavingMidPageBlamesNoCoordinator},
		{"SpoolingThroughTheGateway", TestSpoolingThroughTheGateway},
		{"GivesUpOnAClientThatStopsReading", TestServerGivesUpOnAClientThatStopsReading},
		{"BoundsACoordinatorsEndlessHead", TestGatewayBoundsACoordinatorsEndlessHead},
		{"RelaysACoordinatorsRefusalOfTheClientsHead", TestGatewayRelaysACoordinatorsRefusalOfTheClientsHead},
	} {
		t.Run(tc.name, tc.test)
	}
}
