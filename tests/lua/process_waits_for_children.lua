-- expect-stdout: child finished after main returned
-- `lutra` waits for the processes still running when the main script returns.
lutra.spawn(function()
  lutra.sleep(0.2)
  print("child finished after main returned")
end)
