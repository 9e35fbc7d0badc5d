# Seed 002's FibHub on Ruby Ractors, the same work as bench/lua/fib_hub.lua: the main
# Ractor sends `requests` requests for fib(n) to a hub Ractor, which hands each to an
# idle worker Ractor (or queues it) and forwards the answers. With mode "serial", the
# same fib(n) calls in a plain loop (the seed's serial version).
#   ruby fib_hub.rb hub|serial [n] [requests] [workers]
Warning[:experimental] = false if Warning.respond_to?(:[]=)

def fib(k) = k < 2 ? k : fib(k - 1) + fib(k - 2)

mode = ARGV[0] || "hub"
n = Integer(ARGV[1] || 20)
requests = Integer(ARGV[2] || 1000)
workers = Integer(ARGV[3] || 2)

sum = 0
if mode == "serial"
  requests.times { sum += fib(n) }
else
  main = Ractor.current
  hub = Ractor.new(main, workers) do |client, count|
    me = Ractor.current
    all = Array.new(count) do
      Ractor.new(me) do |hub_ractor|
        while (k = Ractor.receive) != :stop
          hub_ractor.send([:ans, Ractor.current, fib(k)])
        end
      end
    end
    idle = all.dup
    waiting = []
    loop do
      cmd, a, b = Ractor.receive
      case cmd
      when :req
        (w = idle.pop) ? w.send(a) : waiting.push(a)
      when :ans
        client.send(b)
        waiting.empty? ? idle.push(a) : a.send(waiting.shift)
      else
        all.each { |w| w.send(:stop) }
        all.each { |w| w.respond_to?(:join) ? w.join : w.take }
        break
      end
    end
  end
  requests.times { hub.send([:req, n]) }
  requests.times { sum += Ractor.receive }
  hub.send([:stop])
  hub.respond_to?(:join) ? hub.join : hub.take
end
raise "wrong sum #{sum}" unless sum == requests * fib(n)
puts "fib_hub: ok #{sum}"
