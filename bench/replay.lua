-- wrk script: replays pre-signed requests from REQUESTS_FILE, one per line:
--   path \t webhook-id \t webhook-timestamp \t webhook-signature \t body
-- Thread t of T sends lines t, t+T, t+2T, ... so no two threads send the same line; a thread
-- that runs out starts again (counted as "wrapped" in the summary: those are extra duplicates).
local threads = {}

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function init(args)
  requests, position, wrapped = {}, 0, 0
  local index = 0
  for line in io.lines(os.getenv("REQUESTS_FILE")) do
    if index % tonumber(os.getenv("THREADS")) == tid then
      local path, id, ts, sig, body = line:match("([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)")
      table.insert(requests, wrk.format("POST", path, {
        ["Content-Type"] = "application/json", ["webhook-id"] = id,
        ["webhook-timestamp"] = ts, ["webhook-signature"] = sig}, body))
    end
    index = index + 1
  end
end

function request()
  position = position + 1
  if position > #requests then position, wrapped = 1, wrapped + 1 end
  return requests[position]
end

function done(summary, latency, requests)
  local total = 0
  for _, thread in ipairs(threads) do total = total + thread:get("wrapped") end
  io.write(string.format("WRAPPED %d\n", total))
end
