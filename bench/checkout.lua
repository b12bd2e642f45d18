-- wrk script for bench/checkout.py: every request is a checkout of its own Open order,
-- POST /v1/orders/<PREFIX><n>/payment with the customer's bearer token. Thread t of T takes
-- orders t+1, t+1+T, ...; past ORDERS it counts "exhausted" (raise --orders if it is not 0).
local threads = {}

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function init(args)
  step = tonumber(os.getenv("THREADS"))
  n = tid + 1 - step
  limit = tonumber(os.getenv("ORDERS"))
  exhausted = 0
  headers = {["Authorization"] = "Bearer " .. os.getenv("TOKEN")}
end

function request()
  n = n + step
  if n > limit then exhausted = exhausted + 1 end
  return wrk.format("POST", "/v1/orders/" .. os.getenv("PREFIX") .. n .. "/payment", headers, "")
end

function done(summary, latency, requests)
  local total = 0
  for _, thread in ipairs(threads) do total = total + thread:get("exhausted") end
  io.write(string.format("EXHAUSTED %d\n", total))
  io.write(string.format("P50_US %d\n", latency:percentile(50)))
  io.write(string.format("P99_US %d\n", latency:percentile(99)))
end
