// The ns-3 side of scripts/bench-ns3.sh: the simulator bench's workload (sim/benches/sim.rs)
// run in ns-3, timed the way the bench times its `run`.
//
// Every host of an ibsim net file sends to every other host, as fast as its link allows, over
// store-and-forward point-to-point links (ns3::PointToPointNetDevice and its channel). There are
// no credits, no VLs and no arbitration: a port's queue is one FIFO, large enough never to drop.
// The switches forward by destination from tables computed here from the net file: at each
// switch, every destination takes a shortest path, and among equal ones the port that carries
// the fewest destinations so far (the balancing of OpenSM's minhop, not its exact LFTs).
//
// Two stacks, chosen with --stack:
// - bare: no IP. A packet carries a 2-byte destination header; a switch's protocol handler
//   reads it, looks the output device up in a vector and sends a copy of the packet there.
// - ipv4: ns-3's InternetStackHelper on every node. Each link is a /30; every switch has a
//   static /32 host route per host (the same ports as bare), every host a default route. Hosts
//   send UDP datagrams from a socket to a sink socket on each host. Queue discs are
//   uninstalled, so that IP hands packets to the device's FIFO as bare does. ns-3's static
//   routing scans a node's whole table for each packet: at a switch, a route per host and one
//   per link.
//
// A host's source is greedy: whenever its device starts sending a packet, it hands the device
// the next one, so the host link never idles. Destinations rotate: host h sends to h+1, h+2, ...
// (mod the host count), skipping itself. On fat-tree-648 (18 hosts and 18 uplinks per leaf),
// routed as above, the hosts' k-th packets then form a permutation whose paths share no link:
// no packet waits in a switch, and at the stop the queues hold only the hosts' next packets.
//
// Timer: `run` covers Simulator::Run() alone, from the first event to the stop at the
// simulated duration; building the nodes, links, tables and routes is `setup`. Events are
// ns-3's count of events executed by Run(). A packet-hop is a packet that starts crossing a
// link (one that is still crossing at the stop counts), as the bench counts them: the sum over
// devices of the packets their queues handed to the wire.
//
// Usage: fat-tree-all-to-all --net=FILE [--stack=bare|ipv4] [--durationUs=100] [--payload=2048]
//                            [--gbps=32] [--propagationNs=5] [--scheduler=ns3::MapScheduler]

#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <vector>

// ns-3 has no version macro; scripts/bench-ns3.sh passes the version it built against.
#ifndef NS3_RELEASE
#define NS3_RELEASE "(version not given)"
#endif

using namespace ns3;

namespace
{

// The point-to-point device carries only the protocol numbers PPP names (IPv4 and IPv6), so
// the bare stack's packets travel as 0x0800 too; no node has an IP stack to claim them then.
constexpr uint16_t kProtocol = 0x0800;
constexpr uint16_t kUdpPort = 9;

// What an InfiniBand data packet carries besides its payload (LRH 8, BTH 12, ICRC 4, VCRC 2),
// and the 64-byte blocks the bench's engine sends a packet in.
constexpr uint32_t kIbHeaderBytes = 26;
constexpr uint32_t kBlockBytes = 64;
// The PPP header the point-to-point device adds, and the IPv4 and UDP headers of the ipv4 stack.
constexpr uint32_t kPppBytes = 2;
constexpr uint32_t kIpv4UdpBytes = 20 + 8;

// The bare stack's one header: the destination host, where an InfiniBand LRH has its DLID.
class DestinationHeader : public Header
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("DestinationHeader")
                                .SetParent<Header>()
                                .AddConstructor<DestinationHeader>();
        return tid;
    }

    TypeId GetInstanceTypeId() const override
    {
        return GetTypeId();
    }

    uint32_t GetSerializedSize() const override
    {
        return 2;
    }

    void Serialize(Buffer::Iterator start) const override
    {
        start.WriteHtonU16(host);
    }

    uint32_t Deserialize(Buffer::Iterator start) override
    {
        host = start.ReadNtohU16();
        return 2;
    }

    void Print(std::ostream& os) const override
    {
        os << "host=" << host;
    }

    uint16_t host = 0;
};

// One node of the net file, and where each of its ports leads.
struct NetNode
{
    std::string name;
    bool isSwitch = false;
    std::map<int, std::pair<std::string, int>> peers; // port -> (peer node, peer port)
};

// Reads ibsim's net format as far as this workload needs: `Switch N "name"` or `Hca N "name"`
// (or `Ca`) heads a node, and each `[port] "peer"[peer port]` line below it links a port.
std::vector<NetNode>
ReadNetFile(const std::string& path)
{
    std::ifstream in(path);
    NS_ABORT_MSG_IF(!in, "cannot read " << path);
    std::vector<NetNode> nodes;
    std::string line;
    while (std::getline(in, line))
    {
        auto firstQuote = line.find('"');
        if (firstQuote == std::string::npos)
        {
            continue;
        }
        auto secondQuote = line.find('"', firstQuote + 1);
        if (secondQuote == std::string::npos)
        {
            continue;
        }
        std::string quoted = line.substr(firstQuote + 1, secondQuote - firstQuote - 1);
        if (line.rfind("Switch", 0) == 0 || line.rfind("Hca", 0) == 0 || line.rfind("Ca", 0) == 0)
        {
            nodes.push_back(NetNode{quoted, line.rfind("Switch", 0) == 0, {}});
        }
        else if (line[0] == '[' && !nodes.empty())
        {
            int port = std::stoi(line.substr(1));
            auto open = line.find('[', secondQuote);
            NS_ABORT_MSG_IF(open == std::string::npos, "no peer port in: " << line);
            nodes.back().peers[port] = {quoted, std::stoi(line.substr(open + 1))};
        }
    }
    return nodes;
}

// A host's greedy source: each time its device starts sending, the next packet goes to the
// device's queue, so the link never idles and the queue holds one packet at most.
class GreedySource
{
  public:
    GreedySource(uint32_t host, uint32_t hostCount, std::function<void(uint32_t)> send)
        : m_host(host),
          m_hostCount(hostCount),
          m_send(std::move(send))
    {
    }

    void SendNext()
    {
        uint32_t destination = (m_host + 1 + m_sent % (m_hostCount - 1)) % m_hostCount;
        ++m_sent;
        m_send(destination);
    }

    void OnTxBegin(Ptr<const Packet>)
    {
        SendNext();
    }

  private:
    uint32_t m_host;
    uint32_t m_hostCount;
    uint64_t m_sent = 0;
    std::function<void(uint32_t)> m_send;
};

// A bare switch: the output device for each destination host.
struct BareSwitch
{
    std::vector<Ptr<NetDevice>> table;

    void Receive(Ptr<NetDevice>,
                 Ptr<const Packet> packet,
                 uint16_t,
                 const Address&,
                 const Address&,
                 NetDevice::PacketType)
    {
        DestinationHeader header;
        packet->PeekHeader(header);
        Ptr<NetDevice> out = table[header.host];
        out->Send(packet->Copy(), out->GetBroadcast(), kProtocol);
    }
};

uint64_t g_delivered = 0;

void
CountDelivered(Ptr<NetDevice>,
               Ptr<const Packet>,
               uint16_t,
               const Address&,
               const Address&,
               NetDevice::PacketType)
{
    ++g_delivered;
}

void
DrainSocket(Ptr<Socket> socket)
{
    while (socket->Recv())
    {
        ++g_delivered;
    }
}

double
SecondsSince(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

uint64_t
PeakResidentKb()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
    {
        if (line.rfind("VmHWM:", 0) == 0)
        {
            return std::stoull(line.substr(6));
        }
    }
    return 0;
}

} // namespace

int
main(int argc, char* argv[])
{
    std::string netPath;
    std::string stack = "bare";
    uint32_t durationUs = 100;
    uint32_t payload = 2048;
    double gbps = 32; // the bench's links: 4x QDR, the traffic file's default
    uint32_t propagationNs = 5;
    std::string scheduler = "ns3::MapScheduler"; // ns-3's default
    CommandLine cmd;
    cmd.AddValue("net", "the ibsim net file", netPath);
    cmd.AddValue("stack", "bare (table-lookup switches, no IP) or ipv4", stack);
    cmd.AddValue("durationUs", "simulated time in microseconds", durationUs);
    cmd.AddValue("payload", "payload bytes of an InfiniBand packet", payload);
    cmd.AddValue("gbps", "link data rate in Gb/s", gbps);
    cmd.AddValue("propagationNs", "one-way propagation delay of a link in ns", propagationNs);
    cmd.AddValue("scheduler", "ns-3's event scheduler", scheduler);
    cmd.Parse(argc, argv);
    NS_ABORT_MSG_IF(netPath.empty(), "--net=FILE is needed");
    NS_ABORT_MSG_IF(stack != "bare" && stack != "ipv4", "--stack is bare or ipv4");
    bool ipv4 = stack == "ipv4";

    auto setupStarted = std::chrono::steady_clock::now();
    ObjectFactory schedulerFactory;
    schedulerFactory.SetTypeId(scheduler);
    Simulator::SetScheduler(schedulerFactory);

    // Each packet is as long on the wire as the bench's: payload and InfiniBand headers in whole
    // 64-byte blocks. The ns-3 headers take their bytes out of that length.
    uint32_t wireBytes = (payload + kIbHeaderBytes + kBlockBytes - 1) / kBlockBytes * kBlockBytes;
    uint32_t headerBytes =
        kPppBytes + (ipv4 ? kIpv4UdpBytes : DestinationHeader().GetSerializedSize());
    NS_ABORT_MSG_IF(wireBytes <= headerBytes, "payload too small");
    uint32_t packetBytes = wireBytes - headerBytes;

    std::vector<NetNode> net = ReadNetFile(netPath);
    std::map<std::string, uint32_t> indexOf;
    std::vector<uint32_t> hosts;    // node indices of the hosts, in file order
    std::vector<int> hostNumber(net.size(), -1);
    for (uint32_t i = 0; i < net.size(); ++i)
    {
        indexOf[net[i].name] = i;
        if (!net[i].isSwitch)
        {
            hostNumber[i] = hosts.size();
            hosts.push_back(i);
        }
    }
    uint32_t hostCount = hosts.size();
    NS_ABORT_MSG_IF(hostCount < 2 || hostCount > 65535, "the net file needs 2 to 65535 hosts");

    NodeContainer nodes;
    nodes.Create(net.size());
    if (ipv4)
    {
        InternetStackHelper internet;
        internet.Install(nodes);
    }

    // One point-to-point link per cable, each end's device noted by (node, port).
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(static_cast<uint64_t>(gbps * 1e9))));
    p2p.SetDeviceAttribute("Mtu", UintegerValue(9000)); // no IP fragmentation of one packet
    p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(propagationNs)));
    p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("4000000p")));
    std::vector<std::map<int, Ptr<NetDevice>>> deviceAt(net.size());
    NetDeviceContainer allDevices;
    Ipv4AddressHelper addresses("10.0.0.0", "255.255.255.252");
    std::vector<Ipv4Address> hostAddress(hostCount);
    std::vector<Ipv4Address> gatewayOf(hostCount); // the switch's address on a host's link
    uint32_t linkCount = 0;
    for (uint32_t a = 0; a < net.size(); ++a)
    {
        for (const auto& [port, peer] : net[a].peers)
        {
            auto found = indexOf.find(peer.first);
            NS_ABORT_MSG_IF(found == indexOf.end(), "unknown node " << peer.first);
            uint32_t b = found->second;
            if (b < a || (b == a && peer.second <= port))
            {
                continue; // each cable once, from its first end in file order
            }
            NetDeviceContainer pair = p2p.Install(nodes.Get(a), nodes.Get(b));
            deviceAt[a][port] = pair.Get(0);
            deviceAt[b][peer.second] = pair.Get(1);
            allDevices.Add(pair);
            ++linkCount;
            if (ipv4)
            {
                Ipv4InterfaceContainer ends = addresses.Assign(pair);
                addresses.NewNetwork();
                for (uint32_t end = 0; end < 2; ++end)
                {
                    uint32_t node = end == 0 ? a : b;
                    if (hostNumber[node] >= 0)
                    {
                        hostAddress[hostNumber[node]] = ends.GetAddress(end);
                        gatewayOf[hostNumber[node]] = ends.GetAddress(1 - end);
                    }
                }
            }
        }
    }
    if (ipv4)
    {
        // Assign installs ns-3's default queue disc (FqCoDel), which drops and reorders; without
        // one, IP hands each packet to the device's FIFO.
        TrafficControlHelper().Uninstall(allDevices);
    }

    // Hop counts from every switch to every host's switch, by breadth-first search.
    uint32_t switchCount = net.size() - hostCount;
    auto neighbourSwitches = [&](uint32_t node) {
        std::vector<std::pair<int, uint32_t>> out; // (port, switch)
        for (const auto& [port, peer] : net[node].peers)
        {
            uint32_t n = indexOf.at(peer.first);
            if (net[n].isSwitch)
            {
                out.emplace_back(port, n);
            }
        }
        return out;
    };
    constexpr uint32_t kFar = ~0u;
    // distance[h][node]: hops from switch `node` to the switch host h hangs on.
    std::vector<std::vector<uint32_t>> distance(hostCount, std::vector<uint32_t>(net.size(), kFar));
    std::vector<std::pair<uint32_t, int>> attachedTo(hostCount); // (switch, its port)
    for (uint32_t h = 0; h < hostCount; ++h)
    {
        const auto& [port, peer] = *net[hosts[h]].peers.begin();
        uint32_t edge = indexOf.at(peer.first);
        attachedTo[h] = {edge, peer.second};
        std::queue<uint32_t> frontier;
        distance[h][edge] = 0;
        frontier.push(edge);
        while (!frontier.empty())
        {
            uint32_t s = frontier.front();
            frontier.pop();
            for (const auto& [_, n] : neighbourSwitches(s))
            {
                if (distance[h][n] == kFar)
                {
                    distance[h][n] = distance[h][s] + 1;
                    frontier.push(n);
                }
            }
        }
    }

    // Each switch's table: per destination host, in file order, the port towards it on a
    // shortest path that carries the fewest destinations so far (lowest port on a tie).
    std::vector<BareSwitch> switches(net.size());
    Ipv4StaticRoutingHelper staticRouting;
    for (uint32_t s = 0; s < net.size(); ++s)
    {
        if (!net[s].isSwitch)
        {
            continue;
        }
        std::map<int, uint32_t> load;
        auto neighbours = neighbourSwitches(s);
        switches[s].table.resize(hostCount);
        for (uint32_t h = 0; h < hostCount; ++h)
        {
            int chosen = -1;
            if (attachedTo[h].first == s)
            {
                chosen = attachedTo[h].second;
            }
            else
            {
                NS_ABORT_MSG_IF(distance[h][s] == kFar, net[s].name << " cannot reach a host");
                for (const auto& [port, n] : neighbours)
                {
                    if (distance[h][n] + 1 == distance[h][s] &&
                        (chosen < 0 || load[port] < load[chosen]))
                    {
                        chosen = port;
                    }
                }
                ++load[chosen];
            }
            switches[s].table[h] = deviceAt[s].at(chosen);
        }
        Ptr<Node> node = nodes.Get(s);
        if (ipv4)
        {
            Ptr<Ipv4> ip = node->GetObject<Ipv4>();
            Ptr<Ipv4StaticRouting> routes = staticRouting.GetStaticRouting(ip);
            for (uint32_t h = 0; h < hostCount; ++h)
            {
                uint32_t interface = ip->GetInterfaceForDevice(switches[s].table[h]);
                routes->AddHostRouteTo(hostAddress[h], interface);
            }
        }
        else
        {
            node->RegisterProtocolHandler(MakeCallback(&BareSwitch::Receive, &switches[s]),
                                          kProtocol,
                                          nullptr);
        }
    }

    // Sinks and greedy sources on the hosts.
    std::vector<std::unique_ptr<GreedySource>> sources;
    for (uint32_t h = 0; h < hostCount; ++h)
    {
        Ptr<Node> node = nodes.Get(hosts[h]);
        Ptr<NetDevice> device = deviceAt[hosts[h]].begin()->second;
        std::function<void(uint32_t)> send;
        if (ipv4)
        {
            Ptr<Ipv4> ip = node->GetObject<Ipv4>();
            staticRouting.GetStaticRouting(ip)->SetDefaultRoute(gatewayOf[h],
                                                                ip->GetInterfaceForDevice(device));
            TypeId udp = UdpSocketFactory::GetTypeId();
            Ptr<Socket> sink = Socket::CreateSocket(node, udp);
            sink->Bind(InetSocketAddress(Ipv4Address::GetAny(), kUdpPort));
            sink->SetRecvCallback(MakeCallback(&DrainSocket));
            Ptr<Socket> socket = Socket::CreateSocket(node, udp);
            socket->Bind();
            send = [socket, packetBytes, &hostAddress](uint32_t destination) {
                socket->SendTo(Create<Packet>(packetBytes),
                               0,
                               InetSocketAddress(hostAddress[destination], kUdpPort));
            };
        }
        else
        {
            node->RegisterProtocolHandler(MakeCallback(&CountDelivered), kProtocol, nullptr);
            send = [device, packetBytes](uint32_t destination) {
                Ptr<Packet> packet = Create<Packet>(packetBytes);
                DestinationHeader header;
                header.host = destination;
                packet->AddHeader(header);
                device->Send(packet, device->GetBroadcast(), kProtocol);
            };
        }
        sources.push_back(std::make_unique<GreedySource>(h, hostCount, send));
        GreedySource* source = sources.back().get();
        device->TraceConnectWithoutContext("PhyTxBegin",
                                           MakeCallback(&GreedySource::OnTxBegin, source));
        Simulator::ScheduleWithContext(node->GetId(), Seconds(0), &GreedySource::SendNext, source);
    }
    Simulator::Stop(MicroSeconds(durationUs));
    double setupS = SecondsSince(setupStarted);

    auto runStarted = std::chrono::steady_clock::now();
    Simulator::Run();
    double runS = SecondsSince(runStarted);
    uint64_t events = Simulator::GetEventCount();

    uint64_t packetHops = 0;
    uint64_t queued = 0;
    uint64_t dropped = 0;
    uint32_t longestQueue = 0;
    for (auto device = allDevices.Begin(); device != allDevices.End(); ++device)
    {
        Ptr<Queue<Packet>> q = DynamicCast<PointToPointNetDevice>(*device)->GetQueue();
        packetHops += q->GetTotalReceivedPackets() - q->GetTotalDroppedPackets() - q->GetNPackets();
        queued += q->GetNPackets();
        dropped += q->GetTotalDroppedPackets();
        longestQueue = std::max(longestQueue, q->GetNPackets());
    }

    std::string fabric = netPath.substr(netPath.find_last_of('/') + 1);
    fabric = fabric.substr(0, fabric.find('.'));
    std::printf("%s all-to-all in ns-3 %s, %s stack, %s: %u hosts, %u switches, %u links, "
                "payload %u B (%u B on the wire), %g Gb/s, %u ns, %u us simulated\n",
                fabric.c_str(),
                NS3_RELEASE,
                stack.c_str(),
                scheduler.c_str(),
                hostCount,
                switchCount,
                linkCount,
                payload,
                wireBytes,
                gbps,
                propagationNs,
                durationUs);
    std::printf("setup: nodes, links, tables %.2f s\n", setupS);
    std::printf("run: %.3f s, %llu events (%.2f M events/s), "
                "%llu packet-hops (%.2f M packet-hops/s)\n",
                runS,
                static_cast<unsigned long long>(events),
                events / runS / 1e6,
                static_cast<unsigned long long>(packetHops),
                packetHops / runS / 1e6);
    std::printf("delivered %llu packets; "
                "at the stop %llu queued (longest queue %u), %llu dropped\n",
                static_cast<unsigned long long>(g_delivered),
                static_cast<unsigned long long>(queued),
                longestQueue,
                static_cast<unsigned long long>(dropped));
    std::printf("peak resident memory: %llu MB\n",
                static_cast<unsigned long long>(PeakResidentKb() / 1024));
    Simulator::Destroy();
    return 0;
}
