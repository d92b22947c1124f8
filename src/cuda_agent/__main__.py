from cuda_agent.cli.main import main

main()
