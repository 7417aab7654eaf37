// A loopback TCP proxy in front of a real server that cuts the first event stream right
// after its first event — a dropped connection, for the reconnection tests. It records
// the Last-Event-ID each event-stream request carried.

import * as net from "node:net";

export interface CuttingProxy {
  baseUrl: string;
  /** The Last-Event-ID header of each /events request, in order (null when absent). */
  lastEventIds: (string | null)[];
  close(): Promise<void>;
}

export async function cuttingProxy(upstream: string): Promise<CuttingProxy> {
  const target = new URL(upstream);
  const lastEventIds: (string | null)[] = [];
  let cut = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    const remote = net.connect(Number(target.port), target.hostname);
    sockets.add(remote);
    let request = "";
    let isStream = false;
    let cutThis = false;
    let sent = "";
    client.on("data", (data: Buffer) => {
      if (!request.includes("\r\n\r\n")) {
        request += data.toString("latin1");
        if (request.includes("\r\n\r\n") && /^GET [^ ]*\/events /.test(request)) {
          isStream = true;
          const header = /^last-event-id: *(.*)$/im.exec(request);
          lastEventIds.push(header ? header[1].trim() : null);
          if (!cut) {
            cut = true;
            cutThis = true;
          }
        }
      }
      remote.write(data);
    });
    remote.on("data", (data: Buffer) => {
      if (!(isStream && cutThis)) {
        client.write(data);
        return;
      }
      sent += data.toString("latin1");
      const body = sent.indexOf("\r\n\r\n");
      const event = body < 0 ? -1 : sent.indexOf("id:", body);
      const blank = event < 0 ? null : /\r?\n\r?\n/.exec(sent.slice(event));
      if (!blank) return; // hold the bytes until the first event is whole
      client.write(Buffer.from(sent.slice(0, event + blank.index + blank[0].length), "latin1"));
      client.destroy();
      remote.destroy();
    });
    const close = (): void => {
      client.destroy();
      remote.destroy();
    };
    client.on("error", close);
    remote.on("error", close);
    client.on("close", () => remote.destroy());
    remote.on("close", () => client.end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    lastEventIds,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
